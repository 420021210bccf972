package lang

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
)

// deepShapes are expressions whose syntax trees are as deep as they are
// long: the parser reads each chain in a loop, every later walk recurses
// (issue 26, item 0).
func deepShapes(n int) map[string]string {
	return map[string]string{
		"operators":  "x = " + strings.Repeat("1+", n) + "1\n",
		"methods":    "x = \"a\"" + strings.Repeat(".upper()", n) + "\n",
		"attributes": "s = struct(a = 1)\nx = s" + strings.Repeat(".a", n) + "\n",
		"indexes":    "x = [0]" + strings.Repeat("[0]", n) + "\n",
		"or":         "x = 1" + strings.Repeat(" or 1", n) + "\n",
		"template":   "step(\"a\", run = [\"echo\", \"{{ " + strings.Repeat("1+", n) + "1 }}\"])\n",
		"condition":  "a = step(\"a\")\nedge(a, END, when = \"" + strings.Repeat("1+", n) + "1\")\n",
	}
}

// A chain deeper than MaxSyntaxDepth is a positioned parse_error from
// loading, formatting and a REPL chunk, not a fatal stack overflow: with
// the stack held to 8 MiB, 30,000 levels overflowed it in the resolver
// and in stdlib.Rewrite. One just under the bound still loads in that
// stack.
func TestDeepExpressions(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(8 << 20))
	for name, src := range deepShapes(30_000) {
		g, err := LoadSource("deep.star", []byte(src), Options{})
		var ge *graphir.Error
		if name == "template" || name == "condition" {
			// An expression of the graph's: the checker reports it.
			if err != nil || !strings.Contains(fmt.Sprint(check.Graph(g)), "nested too deeply") {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.As(err, &ge) || ge.Code != "parse_error" || ge.Pos.Line < 1 || !strings.Contains(ge.Msg, "expression nested too deeply: more than 10000 levels") {
			t.Errorf("%s: Load: %v", name, err)
		}
		if _, err := Format("deep.star", []byte(src)); !errors.As(err, &ge) || ge.Code != "parse_error" {
			t.Errorf("%s: Format: %v", name, err)
		}
		if _, err := NewSession(t.TempDir(), Options{}).Exec(context.Background(), src); !errors.As(err, &ge) || ge.Code != "parse_error" {
			t.Errorf("%s: Exec: %v", name, err)
		}
	}
	for name, src := range deepShapes(graphir.MaxSyntaxDepth - 10) {
		if name != "operators" && name != "or" {
			continue // a call and its attribute are two levels; the others fail for other reasons
		}
		if _, err := LoadSource("deep.star", []byte(src), Options{}); err != nil {
			t.Errorf("%s just under the bound: %v", name, err)
		}
	}
}
