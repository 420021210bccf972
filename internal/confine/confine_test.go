package confine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a.star"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "b.star"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A link inside the root to a directory outside it, and one to a
	// directory inside it.
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "in")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want string // a part of the error, "" for none
	}{
		{"a.star", ""},
		{"sub/x.star", ""},          // does not exist: compared as written
		{"sub/../a.star", ""},       // cleaned
		{"in/x.star", ""},           // a link to inside the root is inside
		{".", ""},                   // the root itself
		{"missing/deep/x.star", ""}, // a missing directory is compared as written
		{"../outside/b.star", "is outside the flow root"},
		{"..", "is outside the flow root"},
		{"out/b.star", "it is a symbolic link to " + filepath.Join(outside, "b.star")},
		{"out", "it is a symbolic link to"},
	} {
		err := Check(root, filepath.Join(root, tc.path))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%s): %v", tc.path, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%s) = %v, want an error with %q", tc.path, err, tc.want)
		}
	}
}

func TestCheckRelative(t *testing.T) {
	// Relative paths are taken from the working directory, as the loader
	// passes them.
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("flows", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Check("flows", "flows/a.star"); err != nil {
		t.Errorf("Check(flows, flows/a.star): %v", err)
	}
	err := Check("flows", "other/a.star")
	if err == nil || err.Error() != `other/a.star is outside the flow root "flows"` {
		t.Errorf("Check(flows, other/a.star) = %v", err)
	}
}

func TestRel(t *testing.T) {
	for _, tc := range []struct {
		root, path, rel string
		ok              bool
	}{
		{"/a", "/a/b/c", "b/c", true},
		{"/a", "/a", ".", true},
		{"/a", "/a/../b", "", false},
		{"/a", "/b", "", false},
		{"/a", "/a/..b/c", "..b/c", true}, // a name that starts with dots is inside
		{"a", "a/b", "b", true},
		{"/a", "a/b", "", false}, // relative against absolute: never inside
		{"a", "/a/b", "", false},
	} {
		rel, ok := Rel(tc.root, tc.path)
		if rel != tc.rel || ok != tc.ok {
			t.Errorf("Rel(%q, %q) = %q, %v; want %q, %v", tc.root, tc.path, rel, ok, tc.rel, tc.ok)
		}
	}
}

func TestAbs(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Abs("a/b.star"), filepath.Join(wd, "a", "b.star"); got != want {
		t.Errorf("Abs(a/b.star) = %q, want %q", got, want)
	}
	if got := Abs("/x/../y.star"); got != "/y.star" {
		t.Errorf("Abs(/x/../y.star) = %q, want /y.star", got)
	}
}

// A path over MaxPath is refused at once, not resolved part by part (a
// 200 KB one took minutes): issue 26.
func TestCheckLongPath(t *testing.T) {
	root := t.TempDir()
	long := filepath.Join(root, strings.Repeat("a/", 100_000)+"x.star")
	if err := Check(root, long); err == nil || err.Error() != "a path of "+strconv.Itoa(len(long))+" bytes is longer than the 4096 a path may have" {
		t.Errorf("Check: %v", err)
	}
	ok := filepath.Join(root, strings.Repeat("a/", (MaxPath-len(root))/2-8)+"x.star")
	if err := Check(root, ok); err != nil || len(ok) > MaxPath {
		t.Errorf("Check of %d bytes: %v", len(ok), err)
	}
}
