package lang

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// One operation that would make a huge value is a load error at the
// operation, naming what was too big and the bound, and it is stopped
// before it allocates (issue 9). The operands here are at most a few MiB.
func TestLoadHugeValue(t *testing.T) {
	const big = `s = "x" * 1000000` + "\n" // 1 MB, within the bound
	for _, tc := range []struct {
		name, src, pos string
		frags          []string
	}{
		{"string", `x = 'a' * 999999999`, "flow.star:1:5", []string{"repeating a 1-byte string 999999999 times", "953.7 MiB", "at most 64 MiB"}},
		{"list", `x = [0] * 1000000000`, "flow.star:1:5", []string{"repeating a 1-element list 1000000000 times", "at most 64 MiB"}},
		{"int first", `x = 1000000000 * (0,)`, "flow.star:1:5", []string{"1-element tuple 1000000000 times"}},
		{"shift", `x = "x" * (1 << 29)`, "flow.star:1:5", []string{"1-byte string 536870912 times", "512.0 MiB"}},
		{"bytes", `x = b"ab" * (1 << 40)`, "flow.star:1:5", []string{"2-byte bytes"}},
		{"bigint", `x = "a" * (1 << 100)`, "flow.star:1:5", []string{"1267650600228229401496703205376 times"}},
		{"augmented", "x = 'ab'\nx *= 999999999", "flow.star:2:1", []string{"2-byte string 999999999 times"}},
		{"augmented index", "d = {'k': [1]}\nd['k'] *= 999999999", "flow.star:2:1", []string{"1-element list 999999999 times"}},
		{"in a function", "def f(n):\n    return 'ab' * n\nx = f(999999999)", "flow.star:2:12", []string{"2-byte string"}},
		{"join", big + `x = "".join([s] * 100)`, "flow.star:2:5", []string{"join: joining 68 or more strings would make more than 64 MiB, the most one value may take"}},
		{"join bound method", big + "j = '-'.join\nx = j([s] * 100)", "flow.star:3:5", []string{"join: joining"}},
		{"join computed", big + "sep = ''\nx = getattr(sep, 'jo' + 'in')([s] * 100)", "flow.star:3:5", []string{"join: joining"}},
		{"join of an expression", big + "x = [c for c in [s]][0].join([s] * 100)", "flow.star:2:5", []string{"join: joining 35 or more strings"}},
		{"getattr", big + `x = getattr(",", "join")([s] * 100)`, "flow.star:2:5", []string{"join: joining"}},
		{"replace", big + `x = s.replace("x", "yy" * 50)`, "flow.star:2:5", []string{"replace: replacing 1000000 matches with 100 bytes each", "95.4 MiB"}},
		{"replace empty", big + `x = s.replace("", "y" * 100)`, "flow.star:2:5", []string{"replace: replacing 1000001 matches"}},
		{"split", `s = "," * 5000000` + "\nx = s.split(',')", "flow.star:2:5", []string{"split: splitting into 5000001 pieces"}},
		{"split words", `s = "a " * 5000000` + "\nx = s.split()", "flow.star:2:5", []string{"split: splitting into 5000000 pieces"}},
		{"splitlines", `s = "\n" * 5000000` + "\nx = s.splitlines()", "flow.star:2:5", []string{"splitlines: splitting into 5000001 pieces"}},
		{"format", big + `x = ("{}" * 100).format(s)`, "flow.star:2:5", []string{"format: formatting 100 fields"}},
		{"percent", big + `x = ("%s" * 100) % tuple([s] * 100)`, "flow.star:2:5", []string{"formatting with %"}},
		{"percent dict", big + `x = ("%(a)s" * 100) % {"a": s}`, "flow.star:2:5", []string{"formatting with %"}},
		{"str", big + `x = str([s] * 100)`, "flow.star:2:5", []string{"str: the text of its arguments would make more than 64 MiB"}},
		{"str of a set", big + `x = str([set([s])] * 100)`, "flow.star:2:5", []string{"str: the text of its arguments would make more than 64 MiB"}},
		{"json", big + `x = json.encode([s] * 100)`, "flow.star:2:5", []string{"json.encode: the text"}},
		{"json.encode_indent", big + `x = json.encode_indent(list(range(100)), indent = s)`, "flow.star:2:5", []string{"json.encode_indent: indenting would make more than 64 MiB"}},
		{"json.indent", big + `x = json.indent("[" + "1," * 99 + "1]", prefix = s)`, "flow.star:2:5", []string{"json.indent: indenting would make more than 64 MiB"}},
		{"re.sub", big + `x = re.sub("x", "y" * 100, s)`, "flow.star:2:5", []string{"re.sub: replacing 1000000 matches"}},
		{"list of elems", `s = "x" * 5000000` + "\nx = list(s.elems())", "flow.star:2:5", []string{"list: making 5000000 elements of 16 bytes would make 76.3 MiB"}},
		{"sorted elems", `s = "x" * 5000000` + "\nx = sorted(s.elems())", "flow.star:2:5", []string{"sorted: making 5000000 elements"}},
		{"tuple of range", `x = tuple(range(5000000))`, "flow.star:1:5", []string{"tuple: making 5000000 elements"}},
		{"enumerate", `s = "x" * 2000000` + "\nx = enumerate(s.elems())", "flow.star:2:5", []string{"enumerate: making 6000000 elements"}},
		{"zip", `s = "x" * 2000000` + "\nx = zip(s.elems(), range(3000000))", "flow.star:2:5", []string{"zip: making 6000000 elements"}},
		{"re.findall", `s = "x" * 2000000` + "\nx = re.findall('x', s)", "flow.star:2:5", []string{"re.findall: finding 2000000 matches (about 64 bytes each) would make 122.1 MiB; one value may take at most 64 MiB"}},
		{"re.findall groups", `s = "x" * 1000000` + "\nx = re.findall('(x)', s)", "flow.star:2:5", []string{"re.findall: finding 1000000 matches (about 96 bytes each)"}},
		{"re.split", `s = "," * 2000000` + "\nx = re.split(',', s)", "flow.star:2:5", []string{"re.split: splitting at 2000000 matches"}},
		{"re.sub groups", big + `x = re.sub("(x+)", "$1" * 100, s)`, "flow.star:2:5", []string{"re.sub: replacing 1 matches"}},
		{"list of codepoints", `s = "é" * 4500000` + "\nx = list(s.codepoints())", "flow.star:2:5", []string{"list: making 4500000 elements of 16 bytes would make 68.7 MiB"}},
		{"enumerate of codepoints", `s = "x" * 2000000` + "\nx = enumerate(s.codepoint_ords())", "flow.star:2:5", []string{"enumerate: making 6000000 elements"}},
		{"enumerate of a list", `s = [0] * 2000000` + "\nx = enumerate(s)", "flow.star:2:5", []string{"enumerate: making 6000000 elements of 16 bytes would make 91.6 MiB"}},
		{"zip of lists", `s = [0] * 1500000` + "\nx = zip(s, s)", "flow.star:2:5", []string{"zip: making 4500000 elements"}},
		{"json.encode escapes", `s = "<" * 12000000` + "\nx = json.encode(s + '\\n')", "flow.star:2:5", []string{"json.encode: the text of its arguments would make more than 64 MiB"}},
		{"repr escapes", `s = "\x00" * 20000000` + "\nx = repr(s)", "flow.star:2:5", []string{"repr: the text of its arguments would make more than 64 MiB"}},
		{"str of escapes in a list", `s = "\x01" * 20000000` + "\nx = str([s])", "flow.star:2:5", []string{"str: the text of its arguments would make more than 64 MiB"}},
		{"json.decode", `x = json.decode("[" + "{}," * 200000 + "{}]")`, "flow.star:1:5", []string{"json.decode: decoding this JSON would make about 101.0 MiB (past the bound at byte 381302); one value may take at most 64 MiB"}},
		{"json.decode with default", `x = json.decode("[" + "[[[[]]]]," * 400000 + "[]]", default = None)`, "flow.star:1:5", []string{"json.decode: decoding this JSON would make about 73.6 MiB (past the bound at byte 3145727)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := memFS{"flow.star": tc.src}.load(t, "flow.star")
			wantError(t, err, "load_error", tc.pos, tc.frags...)
		})
	}
}

// Strings measured with their escapes are within the bound when what is
// written is: str and print write a string as it is, json.encode a
// printable ASCII one with only quotes and backslashes escaped.
func TestLoadEscapesWithinBound(t *testing.T) {
	src := `
s = "\x00" * 20000000
h = "<" * 12000000
step(json.encode([len(str(s)), len(json.encode(h)), len(repr("\x00" * 1000))]))
`
	g := memFS{"flow.star": src}.mustLoad(t, "flow.star")
	if diff := cmp.Diff([]string{"[20000000,12000002,4002]"}, stepNames(g)); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// Below the bound the checked operations are the plain ones, errors
// included.
func TestLoadCheckedOperations(t *testing.T) {
	src := `
d = {"k": "q", "l": [1]}
d["k"] *= 3
d["l"] *= 2
x = "ab"
x *= 2
p = "%s" % "y"
p %= ()
o = {"k": "a"}
def bump():
    o["k"] = "b"
    return 2
o["k"] *= bump() # o["k"] is read before bump() runs, as in plain Starlark
out = [
    "ab" * 3, 3 * "ab", [1, 2] * 2, (1,) * 0, "ab" * -1, 6 * 7, 2.5 * 2, 7 % 3, 7.5 % 2,
    x, d, p,
    "%s-%d" % ("a", 3), "%(a)s%(a)s" % {"a": "z"},
    ", ".join(["a", "b"]), ", ".join(("c",)), "".join({"k": 1}),
    "aXa".replace("X", "yy"), "aXaX".replace("X", "yy", 1), "ab".replace("", "-"),
    "{}!{x}".format(1, x = 2), "a,b".split(","), " a  b ".split(), "a,b,c".rsplit(",", 1), "a\nb".splitlines(), getattr("a", "join")(["x", "y"]), getattr("a", "nope", "dflt"),
    list("ab".elems()), tuple(range(2)), sorted("ba".elems()), reversed(range(2)), enumerate("a".elems()), zip("ab".elems(), [1]), len(list([0] * 3000000 + [0] * 3000000)),
    json.encode_indent({"a": [1, "x,]"]}, prefix = ">", indent = "  "), json.indent('[1, {"b": []}]', indent = "-"),
    re.findall("(a)(n)?", "banana"), re.split(",", "a,b,c", 1), len(re.split(",", "," * 2000000, 10)), len(re.findall("x", "x" * 500000)),
    str(["a"] * 3), re.sub("(a)", "<$1>", "banana"), re.sub("a", "o", "banana", 2), re.sub("", "-", "abc"),
    o,
]
step(json.encode(out))
`
	g := memFS{"flow.star": src}.mustLoad(t, "flow.star")
	want := []string{`["ababab","ababab",[1,2,1,2],[],"",42,5.0,1,1.5,"abab",{"k":"qqq","l":[1,1]},"y",` +
		`"a-3","zz","a, b","c","k","ayya","ayyaX","-a-b-","1!2",["a","b"],["a","b"],["a,b","c"],["a","b"],"xay","dflt",["a","b"],[0,1],["a","b"],[1,0],[[0,"a"]],[["a",1]],6000000,` +
		`"{\n\u003e  \"a\": [\n\u003e    1,\n\u003e    \"x,]\"\n\u003e  ]\n\u003e}","[\n-1,\n-{\n--\"b\": []\n-}\n]",` + `[["a","n"],["a","n"],["a",""]],["a","b,c"],11,500000,` + `"[\"a\", \"a\", \"a\"]","b<a>n<a>n<a>","bonona","-a-b-c-",{"k":"aa"}]`}
	if diff := cmp.Diff(want, stepNames(g)); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ src, msg string }{
		{`x = {} * 2`, "unknown binary op: dict * int"},
		{`x = "a" % 1`, "too many arguments for format string"},
		{`x = (1).join`, "int has no .join field or method"},
		{`x = "a".jion`, "string has no .jion field or method"},
		{`x = ", ".join([1])`, "join: in list, want string, got int"},
		{"x = (1,)\nx[0] *= 2", "tuple value does not support item assignment"},
		{"d = {}\nd['k'] *= 2", `key "k" not in dict`},
		{"d = {}\ndef f():\n    fail('y ran')\nd['k'] *= f()", `key "k" not in dict`},
		{`x = getattr(1, "join")`, "getattr: int has no .join field or method"},
		{`x = json.indent(1)`, "json.indent: for parameter 1: got int, want string"},
		{`x = json.indent("[]", foo = 1)`, `json.indent: unexpected keyword argument "foo"`},
		// Starlark has no width or precision to write a big value from a small one.
		{`x = "%999999999d" % 1`, "unknown conversion %9"},
		{`x = "%*d" % (999999999, 1)`, "unknown conversion %*"},
		{`x = "{:>999999999}".format(1)`, "format spec features not supported in replacement fields"},
		{`x = list(1)`, "list: for parameter 1: got int, want iterable"},
		{`x = zip(range(2), 1)`, "zip: argument #2 is not iterable: int"},
	} {
		_, err := memFS{"flow.star": tc.src}.load(t, "flow.star")
		if err == nil || !strings.Contains(err.Msg, tc.msg) {
			t.Errorf("%s: got %v, want an error containing %q", tc.src, err, tc.msg)
		}
	}
}
