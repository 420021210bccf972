package graphir

// This file defines the flow root rule shared by the loader (load() and
// literal child flows) and the VM (child flows named at run time): no path
// may leave the root (docs/language.md). Symbolic links are resolved first, so a
// link inside the root that points outside it is outside.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Confine reports an error unless path, relative or absolute, lies inside
// the directory root once symbolic links in both are resolved. A path (or
// part of one) that does not exist is compared as written, so a file that
// is not there yet is reported missing by whoever reads it.
func Confine(root, path string) error {
	absRoot, err1 := resolvePath(root)
	absPath, err2 := resolvePath(path)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("cannot resolve %s", path)
	}
	rel, err := filepath.Rel(absRoot, absPath)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
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
	rel, err := filepath.Rel(absRoot, absPath)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)), nil
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
