package runs

// This file defines where a run store is found: the one way every front
// end (the skein command, a web service) finds and opens it.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/vm/store"
)

// StoreDir is the name of the folder that holds a project's store.
const StoreDir = ".skein"

// StoreEnv is the environment variable that names the store when the
// front end was given none.
const StoreEnv = "SKEIN_STORE"

// Origin is how a store's path was chosen, which says what a person can
// do about a path that is not a store.
type Origin int

const (
	// Named: the front end was given the path (skein's --store).
	Named Origin = iota
	// FromEnv: $SKEIN_STORE named it.
	FromEnv
	// Found: the nearest .skein folder, or beside the flow.
	Found
)

// StoreOrigin is how [StorePath] and [FindStore] choose the path when the
// front end was given named ("" for none).
func StoreOrigin(named string) Origin {
	switch {
	case named != "":
		return Named
	case os.Getenv(StoreEnv) != "":
		return FromEnv
	}
	return Found
}

// StorePath is where the runs of a flow whose root is root are recorded:
// named (the store the front end was given; "" for none), else
// $SKEIN_STORE, else .skein/runs.db in the nearest directory at or above
// root that has a .skein folder, else in root. The store may not exist
// yet: [store.Open] makes it.
func StorePath(named, root string) string {
	if named != "" {
		return named
	}
	if env := os.Getenv(StoreEnv); env != "" {
		return env
	}
	abs := confine.Abs(root)
	if dir, ok := findStoreDir(abs); ok {
		return filepath.Join(dir, StoreDir, store.FileName)
	}
	return filepath.Join(abs, StoreDir, store.FileName)
}

// NoStoreError is the error of [FindStore] when it was given no path, no
// $SKEIN_STORE is set and there is no .skein folder at or above Dir.
type NoStoreError struct{ Dir string }

func (e *NoStoreError) Error() string {
	return fmt.Sprintf("no run store here: no %s folder in %s or above", StoreDir, e.Dir)
}

// FindStore is the path of the existing store that a front end uses when
// it reads runs without naming a flow: named, else $SKEIN_STORE, else the
// nearest .skein/runs.db at or above dir. It never makes one: no store
// there is an error (a [*NoStoreError] when there was nothing to look at).
func FindStore(named, dir string) (string, error) {
	path := named
	if path == "" {
		path = os.Getenv(StoreEnv)
	}
	if path == "" {
		found, ok := findStoreDir(dir)
		if !ok {
			return "", &NoStoreError{Dir: dir}
		}
		path = filepath.Join(found, StoreDir, store.FileName)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no run store at %s", path)
	}
	return path, nil
}

// OpenStore opens the store that records the runs of a flow whose root
// is root, as [StorePath] finds it (named, else $SKEIN_STORE, else the
// nearest .skein), making it when there is none yet. A path that is not
// a run store is a [*store.NotStoreError], which the front end explains
// by [StoreOrigin].
func OpenStore(named, root string) (*store.Store, error) {
	return store.Open(StorePath(named, root))
}

// OpenExistingStore opens the store [FindStore] finds. A path that is
// not a run store is a [*store.NotStoreError], which the front end
// explains by [StoreOrigin].
func OpenExistingStore(named, dir string) (*store.Store, error) {
	path, err := FindStore(named, dir)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(path)
	var ns *store.NotStoreError
	if err != nil && !errors.As(err, &ns) {
		// A store that cannot be written can still be read: listed,
		// shown (a command that writes to it then fails).
		if ro, rerr := store.OpenReadOnly(path); rerr == nil {
			return ro, nil
		}
	}
	return st, err
}

// findStoreDir returns the nearest directory at or above dir with a .skein
// folder.
func findStoreDir(dir string) (string, bool) {
	for {
		if fi, err := os.Stat(filepath.Join(dir, StoreDir)); err == nil && fi.IsDir() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
