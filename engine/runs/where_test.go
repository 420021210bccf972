package runs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinlang/skein/vm/store"
)

// TestStorePath: the named path, else $SKEIN_STORE, else the nearest
// .skein folder at or above the flow's root, else beside the flow.
func TestStorePath(t *testing.T) {
	t.Setenv(StoreEnv, "")
	top := t.TempDir()
	flow := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(flow, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := StorePath("", flow), filepath.Join(flow, ".skein", "runs.db"); got != want {
		t.Errorf("no .skein anywhere: %s, want %s", got, want)
	}
	if err := os.Mkdir(filepath.Join(top, ".skein"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := StorePath("", flow), filepath.Join(top, ".skein", "runs.db"); got != want {
		t.Errorf(".skein above: %s, want %s", got, want)
	}
	if got := StorePath("x.db", flow); got != "x.db" || StoreOrigin("x.db") != Named {
		t.Errorf("named: %s (%v), want x.db", got, StoreOrigin("x.db"))
	}
	if StoreOrigin("") != Found {
		t.Errorf("origin without a name or $%s: %v, want Found", StoreEnv, StoreOrigin(""))
	}
	t.Setenv(StoreEnv, "env.db")
	if got := StorePath("", flow); got != "env.db" || StoreOrigin("") != FromEnv {
		t.Errorf("$%s: %s (%v), want env.db", StoreEnv, got, StoreOrigin(""))
	}
	if got := StorePath("x.db", flow); got != "x.db" {
		t.Errorf("named beats $%s: %s, want x.db", StoreEnv, got)
	}
}

// TestFindStore: an existing store is found as StorePath finds one, and
// never made; none is an error that says where it looked.
func TestFindStore(t *testing.T) {
	t.Setenv(StoreEnv, "")
	top := t.TempDir()
	sub := filepath.Join(top, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := FindStore("", sub)
	var none *NoStoreError
	if !errors.As(err, &none) || none.Dir != sub {
		t.Fatalf("no .skein: %v, want a NoStoreError for %s", err, sub)
	}
	// A .skein folder without a store in it: no store, and none made.
	if err := os.Mkdir(filepath.Join(top, ".skein"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(top, ".skein", "runs.db")
	if _, err := OpenExistingStore("", sub); err == nil || !strings.Contains(err.Error(), "no run store at "+want) {
		t.Fatalf("empty .skein: %v, want no run store at %s", err, want)
	}
	if _, err := os.Stat(want); err == nil {
		t.Fatal("OpenExistingStore made a store")
	}
	st, err := store.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if got, err := FindStore("", sub); err != nil || got != want {
		t.Errorf("found %s (%v), want %s", got, err, want)
	}
	st, err = OpenExistingStore("", sub)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	// A named path that is not a store.
	_, err = OpenExistingStore(sub, top)
	var ns *store.NotStoreError
	if !errors.As(err, &ns) {
		t.Errorf("a directory named: %v, want a NotStoreError", err)
	}
	t.Setenv(StoreEnv, filepath.Join(top, "missing.db"))
	if _, err := FindStore("", sub); err == nil || !strings.Contains(err.Error(), "missing.db") {
		t.Errorf("$%s names a missing store: %v", StoreEnv, err)
	}
}
