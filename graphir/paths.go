package graphir

// This file defines the flow root rule shared by the loader (load() and
// literal child flows) and the VM (child flows named at run time): no path
// may leave the root (SPEC §1, §3).

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Confine reports an error unless path, relative or absolute, lies inside
// the directory root.
func Confine(root, path string) error {
	absRoot, err1 := filepath.Abs(root)
	absPath, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("cannot resolve %s", path)
	}
	rel, err := filepath.Rel(absRoot, absPath)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is outside the flow root %q", path, root)
	}
	return nil
}
