package lang

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"spacing and comments",
			"# top\na=step('a',run=['echo','x'])   # trailing\n\n\n\nchain(START,a,END)\n",
			"# top\na = step(\"a\", run = [\"echo\", \"x\"])  # trailing\n\nchain(START, a, END)\n"},
		{"non-ascii kept",
			"a = step(\"a\", run = [\"echo\", \"héllo ✓\"])  # café\n",
			"a = step(\"a\", run = [\"echo\", \"héllo ✓\"])  # café\n"},
		{"loads stay where and in the order they are",
			"a = step('a')\nload('z.star', 'z')\nload('b.star', 'y', 'x')\n",
			"a = step(\"a\")\n\nload(\"z.star\", \"z\")\nload(\"b.star\", \"x\", \"y\")\n"},
		{"a keep-sorted list keeps its order",
			"a = step('a', run = [  # keep sorted\n    'echo',\n    'b',\n    'a',\n])\n",
			"a = step(\"a\", run = [\n    # keep sorted\n    \"echo\",\n    \"b\",\n    \"a\",\n])\n"},
		{"top-level control and docstrings",
			"def f(r):\n        \"\"\"Doc.\n\n        More.\n        \"\"\"\n        return 1\nfor i in range(2):\n  step('s%d'%i)\n",
			"def f(r):\n    \"\"\"Doc.\n\n    More.\n    \"\"\"\n    return 1\n\nfor i in range(2):\n    step(\"s%d\" % i)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Format("flow.star", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(out)); diff != "" {
				t.Errorf("Format (-want +got):\n%s", diff)
			}
			again, err := Format("flow.star", out)
			if err != nil || string(again) != string(out) {
				t.Errorf("not idempotent: %v\n%s", err, again)
			}
		})
	}
}

func TestFormatSyntaxError(t *testing.T) {
	_, err := Format("flow.star", []byte("a = step(\"a\"\nb = step(\"b\")\n"))
	var ge *graphir.Error
	if !errors.As(err, &ge) {
		t.Fatalf("want a *graphir.Error, got %v", err)
	}
	if ge.Code != "parse_error" || ge.Pos.File != "flow.star" || ge.Pos.Line != 2 || ge.Pos.Col != 1 {
		t.Errorf("got %s, want a parse_error at flow.star:2:1, where skein check puts it", ge)
	}
}

func TestMeaningSeesChanges(t *testing.T) {
	a, err := meaning("f.star", []byte("x = [1, 2]\ny = (1 + 2) * 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"x = [2, 1]\ny = (1 + 2) * 3\n", "x = [1, 2]\ny = 1 + 2 * 3\n", "x = [1, 2]\nz = (1 + 2) * 3\n"} {
		b, err := meaning("f.star", []byte(other))
		if err != nil {
			t.Fatal(err)
		}
		if a == b {
			t.Errorf("meaning of %q equals that of the original", other)
		}
	}
	b, _ := meaning("f.star", []byte("x = [1,\n  2]  # c\ny = ((1 + 2)) * 3\n"))
	if a != b {
		t.Errorf("layout, comments and parentheses changed the meaning:\n%s\n%s", a, b)
	}
}

// Blocks indented with tabs, which the loader accepts (a tab reaches the
// next multiple of 8), format; a string's own tabs stay (issue 26: 31
// such files were refused).
func TestFormatTabs(t *testing.T) {
	for src, want := range map[string]string{
		"def f(x):\n\tif x:\n\t\treturn x\n\treturn 2\n":               "def f(x):\n    if x:\n        return x\n    return 2\n",
		"if True:\n  \ty = 1\n":                                        "if True:\n    y = 1\n",
		"def f():\n\ts = \"\"\"\n\tkeep\n\t\"\"\"\n\treturn s\n":       "def f():\n    s = \"\"\"\n\tkeep\n\t\"\"\"\n    return s\n",
		"x = [\n\t1,\n\t2,\n]\n":                                       "x = [\n    1,\n    2,\n]\n",
		"for i in range(2):\n\tstep(\"s%d\" % i, run = [\"a\\tb\"])\n": "for i in range(2):\n    step(\"s%d\" % i, run = [\"a\\tb\"])\n",
	} {
		if _, err := LoadSource("tabs.star", []byte(src), Options{}); err != nil {
			t.Fatalf("%q does not load: %v", src, err)
		}
		got, err := Format("tabs.star", []byte(src))
		if err != nil || string(got) != want {
			t.Errorf("Format(%q) = %q, %v; want %q", src, got, err, want)
		}
	}
}
