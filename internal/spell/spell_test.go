package spell

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"publish", "build", "draft", "review", "ab"}
	for x, want := range map[string]string{
		"publsh": "publish", "pubilsh": "publish", "buidl": "build", "drfat": "draft",
		"review": "", "zzzzzz": "", "x": "", "ba": "ab", "": "",
	} {
		if got := Nearest(x, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", x, got, want)
		}
	}
}

func TestNearestFirstOfEquals(t *testing.T) {
	// "bat" is one edit from both; the first in the list wins.
	if got := Nearest("bat", []string{"cat", "hat"}); got != "cat" {
		t.Errorf("Nearest = %q, want cat", got)
	}
	if got := Nearest("bat", []string{"hat", "cat"}); got != "hat" {
		t.Errorf("Nearest = %q, want hat", got)
	}
}

func TestNearestLimit(t *testing.T) {
	// One typo in four characters, and never more than three.
	for _, tc := range []struct {
		x, cand, want string
	}{
		{"abc", "abd", "abd"},                // 1 edit, limit 1
		{"abc", "axy", ""},                   // 2 edits, limit 1
		{"abcdefgh", "abcdefxy", "abcdefxy"}, // 2 edits, limit 3
		{"abcdefghijklmnop", "abcdefghijklmxyz", "abcdefghijklmxyz"}, // 3 edits, limit 3
		{"abcdefghijklmnop", "abcdefghijklwxyz", ""},                 // 4 edits, limit 3
	} {
		if got := Nearest(tc.x, []string{tc.cand}); got != tc.want {
			t.Errorf("Nearest(%q, [%q]) = %q, want %q", tc.x, tc.cand, got, tc.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	if got, want := Suggest("publsh", []string{"build", "publish"}), ` (did you mean "publish"?)`; got != want {
		t.Errorf("Suggest = %q, want %q", got, want)
	}
	if got := Suggest("zzzz", []string{"build", "publish"}); got != "" {
		t.Errorf("Suggest of no near name = %q, want empty", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"ab", "ba", 1}, // a transposition is one edit
		{"é", "e", 1},   // runes, not bytes
	} {
		if got := editDistance(tc.a, tc.b, 100); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := editDistance("aaaaaaaa", "bbbbbbbb", 2); got < 2 {
		t.Errorf("editDistance with max 2 = %d, want >= 2", got)
	}
}

func FuzzNearest(f *testing.F) {
	f.Add("publsh", "publish")
	f.Add("é", "e")
	f.Fuzz(func(t *testing.T, x, c string) {
		got := Nearest(x, []string{c})
		if got != "" && got != c {
			t.Fatalf("Nearest(%q, [%q]) = %q", x, c, got)
		}
		if c == x && got != "" {
			t.Fatalf("Nearest suggested x itself")
		}
	})
}
