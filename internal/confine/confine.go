// Package confine keeps paths inside a directory: the flow root rule shared
// by the loader (load() and literal child flows), the VM (child flows named
// at run time) and flow tests (flows and mocks they name): no path may leave
// the root (docs/language.md). [Check] resolves symbolic links first, so a
// link inside the root that points outside it is outside.
//
// It checks, it does not open: a link swapped between the check and the
// read is not detected (docs/security.md). It is not a sandbox for what a
// task's process may touch.
package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MaxPath is the longest path Check accepts, in bytes: Linux's PATH_MAX,
// beyond which no system call takes a path anyway. Resolving a path walks
// up from its end to the part that exists, one resolution per missing
// part, each as long as the path: a computed flow= of 200 KB took minutes.
const MaxPath = 4096

// Check reports an error unless path, relative or absolute, lies inside
// the directory root once symbolic links in both are resolved. A path (or
// part of one) that does not exist is compared as written, so a file that
// is not there yet is reported missing by whoever reads it. A path longer
// than [MaxPath] is refused before anything is resolved.
func Check(root, path string) error {
	if len(path) > MaxPath {
		return fmt.Errorf("a path of %d bytes is longer than the %d a path may have", len(path), MaxPath)
	}
	absRoot, err1 := resolvePath(root)
	absPath, err2 := resolvePath(path)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("cannot resolve %s", path)
	}
	if _, inside := Rel(absRoot, absPath); !inside {
		if lexical, lerr := lexicallyInside(root, path); lerr == nil && lexical {
			return fmt.Errorf("%s is outside the flow root %q: it is a symbolic link to %s, or is inside one", path, root, absPath)
		}
		return fmt.Errorf("%s is outside the flow root %q", path, root)
	}
	return nil
}

func lexicallyInside(root, path string) (bool, error) {
	absRoot, err1 := filepath.Abs(root)
	absPath, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return false, fmt.Errorf("cannot resolve %s", path)
	}
	_, inside := Rel(absRoot, absPath)
	return inside, nil
}

// Rel returns path relative to root, and whether path lies inside root, as
// both are written: symbolic links are not resolved and a relative path is
// not made absolute (a relative path is never inside an absolute root, nor
// the other way round). It is for naming and placing paths ("flows/b.star"
// rather than an absolute path, a task's directory on another worker), not
// for keeping a flow in its root, which is [Check]'s job.
func Rel(root, path string) (string, bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// resolvePath makes path absolute and resolves the symbolic links of its
// longest existing prefix.
func resolvePath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		} else if !os.IsNotExist(err) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs, nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// Abs returns path made absolute, or path as it is when the working
// directory cannot be read: the form under which a run records its files
// and the front ends compare them.
func Abs(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
