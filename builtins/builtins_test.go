package builtins_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/builtins"
	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
)

// prelude declares steps that the bad calls below may use; it is line 1-3,
// so each case's own code starts on line 4.
const prelude = `a = step("a")
b = step("b")
c = step("c", fn = lambda r: 1)
`

func load(src string) (*graphir.Graph, error) {
	return lang.LoadSource("flow.star", []byte(src), lang.Options{})
}

// diag loads src and returns its one load diagnostic.
func diag(t *testing.T, src string) (check.Diagnostic, bool) {
	t.Helper()
	_, err := load(src)
	if err == nil {
		return check.Diagnostic{}, false
	}
	var ge *graphir.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %T is not a *graphir.Error: %v", err, err)
	}
	return check.FromError(ge), true
}

// where is what a bad-call test compares exactly.
type where struct {
	Code     string
	Line     int
	Col      int
	Severity string
}

type badCall struct {
	src  string // one line, after the prelude: reported at 4:1
	frag string // a fragment of the message
	hint string // the exact hint, if any
	at   string // "line:col" when not 4:1
}

func runBad(t *testing.T, cases []badCall) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			d, ok := diag(t, prelude+tc.src+"\n")
			if !ok {
				t.Fatalf("no error for %s", tc.src)
			}
			want := where{"load_error", 4, 1, "error"}
			if tc.at != "" {
				fmt.Sscanf(tc.at, "%d:%d", &want.Line, &want.Col)
			}
			got := where{string(d.Code), d.Pos.Line, d.Pos.Col, d.Severity.String()}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: %s\n(-want +got):\n%s", tc.src, d, diff)
			}
			if d.Pos.File != "flow.star" {
				t.Errorf("file %q", d.Pos.File)
			}
			if !strings.Contains(d.Message, tc.frag) {
				t.Errorf("message %q does not contain %q", d.Message, tc.frag)
			}
			if d.Hint != tc.hint {
				t.Errorf("hint %q, want %q", d.Hint, tc.hint)
			}
		})
	}
}

func TestFlowBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `flow(name = 1)`, frag: `flow: name must be a non-empty string, got int 1`},
		{src: `flow(name = "")`, frag: `flow: name must be a non-empty string, got string ""`},
		{src: `flow("a", "b")`, frag: `flow: takes 1 positional argument (name); give the others by keyword`},
		{src: `flow(descripton = "x")`, frag: `flow: unexpected keyword argument "descripton"`, hint: `did you mean "description"?`},
		{src: `flow(max_cost = -1)`, frag: `max_cost must be a positive number of US dollars, got int -1`},
		{src: `flow(max_cost = True)`, frag: `max_cost must be a positive number of US dollars`},
		{src: `flow(colour = "x")`, frag: `flow: unexpected keyword argument "colour" (want one of name, description, inputs, output, max_visits, timeout, on_exit, max_tokens, tools, max_grants, concurrency, concurrency_key, emit, max_depth, keep, max_cost)`},
		{src: `flow(description = 1)`, frag: `flow: description must be a string, got int 1`},
		{src: `flow(on_exit = 1)`, frag: `flow: on_exit must be a step or the name of one, got int 1`},
		{src: `flow(on_exit = "")`, frag: `flow: on_exit must name a step, got ""`},
		{src: `flow(on_exit = END)`, frag: `flow: on_exit cannot be END`},
		{src: `flow(inputs = ["x"])`, frag: `flow: inputs must be a dict, got list ["x"]`},
		{src: `flow(inputs = {1: "x"})`, frag: `flow: inputs: keys must be strings, got int 1`},
		{src: `flow(inputs = {"Topic": "x"})`, frag: `flow: inputs: input name "Topic" must match [a-z_][a-z0-9_]*`},
		{src: `flow(inputs = {"x": a})`, frag: `flow: inputs: default of "x":`},
		{src: `flow(output = 1)`, frag: `flow: output must be an expression string or a function of r, got int 1`},
		{src: `flow(output = lambda: 1)`, frag: `flow: output must be a function of one parameter r; lambda takes 0`},
		{src: `flow(max_visits = 0)`, frag: `flow: max_visits must be at least 1, got 0`},
		{src: `flow(max_visits = "3")`, frag: `flow: max_visits must be an int, got string "3"`},
		{src: `flow(max_visits = True)`, frag: `flow: max_visits must be an int, got bool True`},
		{src: `flow(max_visits = 1 << 40)`, frag: `flow: max_visits is too large`},
		{src: `flow(timeout = "soon")`, frag: `flow: timeout must be a positive duration such as "30s" or "10m", got "soon"`},
		{src: `flow(timeout = "-5s")`, frag: `flow: timeout must be a positive duration such as "30s" or "10m", got "-5s"`},
		{src: `flow(timeout = 30)`, frag: `flow: timeout must be a duration string such as "30s", got int 30`},
		{src: `flow(name = "x"); flow(name = "y")`, frag: `flow() was already called at flow.star:4:1`, at: "4:19"},
	})
	// The second flow() is reported at its own call.
	d, _ := diag(t, "flow()\n\nflow()\n")
	if got, want := d.Pos.String(), "flow.star:3:1"; got != want {
		t.Errorf("second flow() at %s, want %s", got, want)
	}
}

func TestStepBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `step()`, frag: `step: missing argument for name`},
		{src: `step(1)`, frag: `step: name must be a string, got int 1`},
		{src: `step(None)`, frag: `step: name must be a string, got None`},
		{src: `step("x", "echo")`, frag: `step: takes 1 positional argument (name); give the others by keyword`},
		{src: `step("x", rn = ["echo"])`, frag: `step: unexpected keyword argument "rn"`, hint: `did you mean "run"?`},
		// Habits from other tools: the keyword meant, not all of them.
		{src: `step("x", run = ["echo"], retry = 3)`, frag: `step: unexpected keyword argument "retry"`, hint: `did you mean "retries"?`},
		{src: `step("x", command = ["echo"])`, frag: `step: unexpected keyword argument "command"`, hint: `did you mean "run"?`},
		{src: `step("x", colour = ["echo"])`, frag: `step: unexpected keyword argument "colour" (want one of name, run, shell, fn, flow, args, env, stdin, dir, inputs, max_visits, retries, backoff, timeout, join, llm, system, model, schema, max_tokens, retry_when, wait, approve, agent, tools, max_turns, backoff_factor, max_backoff, jitter, wait_until, partial, fields)`},
		{src: `step("x", run = ["echo"], shell = "echo")`, frag: `step "x": give at most one of run, shell, fn, flow, llm, agent, wait, wait_until, approve; got run and shell`},
		{src: `step("x", fn = len, flow = "c.star")`, frag: `step "x": give at most one of run, shell, fn, flow, llm, agent, wait, wait_until, approve; got fn and flow`},
		{src: `step("x", run = "echo hi")`, frag: `step "x": run must be a list of strings, got string "echo hi"`,
			hint: `write run = ["echo", "hi"] (an argv, no shell), or shell = "echo hi"`},
		{src: `step("x", run = "make all | tee log")`, frag: `run must be a list of strings`,
			hint: `run= executes a program without a shell; for a shell command line write shell = "make all | tee log" (or split it into an argv: run = ["make", "all", "|", "tee", "log"])`},
		{src: `step("x", run = [])`, frag: `step "x": run must name a command: want a non-empty list of strings`},
		{src: `step("x", run = ["echo", 1])`, frag: `step "x": run[1] must be a string, got int 1`},
		{src: `step("x", run = {"a": 1})`, frag: `step "x": run must be a list of strings, got dict {"a": 1}`},
		{src: `step("x", shell = ["echo"])`, frag: `step "x": shell must be a string, got list ["echo"]`},
		{src: `step("x", fn = "f")`, frag: `step "x": fn must be a function of one parameter r, got string "f"`},
		{src: `step("x", fn = lambda: 1)`, frag: `step "x": fn must be a function of one parameter r; lambda takes 0`},
		{src: `step("x", fn = lambda r, s: 1)`, frag: `step "x": fn must be a function of one parameter r; lambda takes 2`},
		{src: `step("x", fn = lambda *r: 1)`, frag: `step "x": fn must be a function of one parameter r`},
		{src: `step("x", flow = 1)`, frag: `step "x": flow must be a string, got int 1`},
		{src: `step("x", wait = 30)`, frag: `step "x": wait must be a string, got int 30`},
		{src: `step("x", wait = "soon")`, frag: `step "x": wait: want a duration such as "30s" or "10m", got "soon"`},
		{src: `step("x", wait = "-1s")`, frag: `step "x": wait: want a duration such as "30s" or "10m", got "-1s"`},
		{src: `step("x", wait_until = "tomorrow")`, frag: `step "x": wait_until: want a time in RFC 3339 such as "2026-12-24T09:00:00Z", got "tomorrow"`},
		{src: `step("x", wait_until = "2026-12-24T09:00:00Z", wait = "1s")`, frag: `step "x": give at most one of run, shell, fn, flow, llm, agent, wait, wait_until, approve; got wait and wait_until`},
		{src: `step("x", wait = "1s", run = ["true"])`, frag: `step "x": give at most one of run, shell, fn, flow, llm, agent, wait, wait_until, approve; got run and wait`},
		{src: `step("x", wait = "1s", env = {"A": "b"})`, frag: `step "x": env applies only to run= and shell= steps`},
		{src: `step("x", run = ["true"], fields = {"v": input()})`, frag: `step "x": fields applies only to approve= steps`},
		{src: `step("x", approve = "go?", fields = ["v"])`, frag: `step "x": fields must be a dict, got list`},
		{src: `step("x", approve = "go?", fields = {"V-1": input()})`, frag: `step "x": fields: field name "V-1" must match [a-z_][a-z0-9_]*`},
		{src: `step("x", run = ["true"], retry_when = "x.exit_code == 75")`, frag: `step "x": retry_when needs retries=N`},
		{src: `step("x", run = ["true"], retries = 2, retry_when = 1)`, frag: `step "x": retry_when must be an expression string or a function of r, got int 1`},
		{src: `step("x", run = ["true"], retries = 2, retry_when = lambda: True)`, frag: `step "x": retry_when must be a function of one parameter r`},
		{src: `step("x", wait = "1s", retries = 2)`, frag: `step "x": retries does not apply to wait= and wait_until= steps`},
		{src: `step("x", approve = "ok?", retry_when = "True")`, frag: `step "x": retry_when does not apply to approve= steps`},
		{src: `step("x", timeout = "1s")`, frag: `step "x": timeout does not apply to a step with no run=`},
		{src: `step("x", llm = "hi", retries = 1, retry_when = "True")`, frag: `step "x": retry_when does not apply to llm= steps`},
		{src: `step("x", run = ["t"], retries = 2, backoff_factor = 0.5)`, frag: `step "x": backoff_factor must be between 1.0 (a constant interval) and 100, got 0.5`},
		{src: `step("x", run = ["t"], retries = 2, backoff = "1m", max_backoff = "10s")`, frag: `step "x": max_backoff 10s is shorter than backoff 1m`},
		{src: `step("x", run = ["t"], retries = 2, jitter = 1)`, frag: `step "x": jitter must be True or False, got int 1`},
		{src: `step("x", run = ["t"], jitter = True)`, frag: `step "x": backoff_factor, max_backoff and jitter shape the delays of retries: give retries=N too`},
		{src: `step("x", llm = "hi", max_backoff = "1m")`, frag: `step "x": max_backoff applies only to run=, shell=, fn= and flow= steps`},
		{src: `tool("t", run = ["true"], final = 1)`, frag: `tool "t": final must be True or False, got int 1`},
		{src: `step("x", join = "any")`, frag: `step "x": join must be one of "and", "or", "all", "done", "first", got "any"`},
		{src: `step("x", flow = "")`, frag: `step "x": flow must name the child flow file, got ""`},
		{src: `step("x", args = ["-v"])`, frag: `step "x": args applies only to run= steps`},
		{src: `step("x", shell = "ls", args = ["-v"])`, frag: `step "x": args applies only to run= steps`},
		{src: `step("x", run = ["ls"], args = "-v")`, frag: `step "x": args must be a list of strings, got string "-v"`},
		{src: `step("x", run = ["ls"], args = [True])`, frag: `step "x": args[0] must be a string, got bool True`},
		{src: `step("x", fn = len, env = {"A": "1"})`, frag: `step "x": env applies only to run= and shell= steps`},
		{src: `step("x", run = ["ls"], env = ["A=1"])`, frag: `step "x": env must be a dict, got list ["A=1"]`},
		{src: `step("x", run = ["ls"], env = {"A": 1})`, frag: `step "x": env["A"] must be a string, got int 1`},
		{src: `step("x", run = ["ls"], env = {"": "1"})`, frag: `step "x": env: "" is not a valid variable name`},
		{src: `step("x", run = ["ls"], env = {"A=B": "1"})`, frag: `step "x": env: "A=B" is not a valid variable name`},
		{src: `step("x", run = ["ls"], env = {1: "1"})`, frag: `step "x": env: keys must be strings, got int 1`},
		{src: `step("x", stdin = "hi")`, frag: `step "x": stdin applies only to run= and shell= steps`},
		{src: `step("x", run = ["cat"], stdin = 1)`, frag: `step "x": stdin must be a string, got int 1`},
		{src: `step("x", run = ["ls"], dir = 1)`, frag: `step "x": dir must be a string, got int 1`},
		{src: `step("x", fn = len, dir = "sub")`, frag: `step "x": dir applies only to run= and shell= steps`},
		{src: `step("x", run = ["ls"], inputs = {"a": "1"})`, frag: `step "x": inputs applies only to flow= steps`},
		{src: `step("x", flow = "c.star", inputs = ["a"])`, frag: `step "x": inputs must be a dict, got list ["a"]`},
		{src: `step("x", flow = "c.star", inputs = {"a": a})`, frag: `step "x": inputs["a"]:`},
		{src: `step("x", max_visits = 0)`, frag: `step "x": max_visits must be at least 1, got 0`},
		{src: `step("x", max_visits = -2)`, frag: `step "x": max_visits must be at least 1, got -2`},
		{src: `step("x", max_visits = 2.0)`, frag: `step "x": max_visits must be an int, got float 2.0`},
		{src: `step("x", retries = -1)`, frag: `step "x": retries must be at least 0, got -1`},
		{src: `step("x", retries = "2")`, frag: `step "x": retries must be an int, got string "2"`},
		{src: `step("x", retries = 1000000000)`, frag: `step "x": retries must be at most 100, got 1000000000`},
		{src: `step("x", backoff = "1x")`, frag: `step "x": backoff must be a positive duration such as "30s" or "10m", got "1x"`},
		{src: `step("x", backoff = "0s")`, frag: `step "x": backoff must be a positive duration such as "30s" or "10m", got "0s"`},
		{src: `step("x", backoff = 1)`, frag: `step "x": backoff must be a duration string such as "30s", got int 1`},
		{src: `step("x", timeout = "10")`, frag: `step "x": timeout must be a positive duration such as "30s" or "10m", got "10"`},
		{src: `step("x", join = "xor")`, frag: `step "x": join must be one of "and", "or", "all", "done", "first", got "xor"`},
		{src: `step("x", join = True)`, frag: `step "x": join must be "and", "or", "all", "done" or "first", got bool True`},
	})
}

func TestEdgeBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `edge(a)`, frag: `edge: missing argument for dst`},
		{src: `edge()`, frag: `edge: missing argument for src`},
		{src: `edge(a, b, "x")`, frag: `edge: takes 2 positional arguments (src, dst); give the others by keyword`},
		{src: `edge(END, a)`, frag: `edge: src cannot be END`},
		{src: `edge(ABORT, a)`, frag: `edge: src cannot be ABORT`},
		{src: `edge(a, START)`, frag: `edge: dst cannot be START`},
		{src: `edge("a", b)`, frag: `edge: src must be a step, got string "a"`,
			hint: `pass the step itself, the value step("a") returned, not its name; only a router's routes, cases and default take step names`},
		{src: `edge(a, None)`, frag: `edge: dst must be a step, got None`},
		{src: `edge(a, [b])`, frag: `edge: dst must be a step, got list [<step b>]`},
		{src: `edge(a, b, when = 1)`, frag: `edge: when must be an expression string or a function of r, got int 1`},
		{src: `edge(a, b, when = lambda: True)`, frag: `edge: when must be a function of one parameter r; lambda takes 0`},
		{src: `edge(a, b, wehn = "x")`, frag: `edge: unexpected keyword argument "wehn"`, hint: `did you mean "when"?`},
		{src: `edge(a, b, on = "fail")`, frag: `edge: on must be "success", "failure" or "always", got "fail"`},
		{src: `edge(a, b, on = False)`, frag: `edge: on must be "success", "failure" or "always", got bool False`},
		{src: `edge(START, a, on = "failure")`, frag: `edge: an edge from START cannot have on="failure"`},
	})
}

func TestChainBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `chain(a)`, frag: `chain: needs at least two steps, got 1`},
		{src: `chain()`, frag: `chain: needs at least two steps, got 0`},
		{src: `chain([a])`, frag: `chain: needs at least two steps, got 1`},
		{src: `chain(a, b, on = "failure")`, frag: `chain: takes no keyword arguments`},
		{src: `chain(a, START)`, frag: `chain: argument 2 cannot be START`},
		{src: `chain(END, a)`, frag: `chain: argument 1 cannot be END`},
		{src: `chain(a, END, b)`, frag: `chain: argument 2 cannot be END`},
		{src: `chain(a, "b")`, frag: `chain: argument 2 must be a step, got string "b"`,
			hint: `pass the step itself, the value step("b") returned, not its name; only a router's routes, cases and default take step names`},
	})
}

func TestRouterBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `router("r")`, frag: `router "r": needs routes= (with by=) or cases=`},
		{src: `router("r", default = a)`, frag: `router "r": needs routes= (with by=) or cases=`},
		{src: `router("r", routes = {"x": a})`, frag: `router "r": routes= needs by=, the expression that picks a label`},
		{src: `router("r", by = "a.label")`, frag: `router "r": by= needs routes=, the map from labels to steps`},
		{src: `router("r", by = "a", routes = {"x": a}, cases = [("a", b)])`, frag: `router "r": give routes= (with by=) or cases=, not both`},
		{src: `router("r", by = "a", routes = {})`, frag: `router "r": routes must have at least one label`},
		{src: `router("r", by = "a", routes = [a])`, frag: `router "r": routes must be a dict, got list [<step a>]`},
		{src: `router("r", by = "a", routes = {1: a})`, frag: `router "r": routes: keys must be strings, got int 1`},
		{src: `router("r", by = "a", routes = {"x": 1})`, frag: `router "r": routes["x"] must be a step or a step name, got int 1`},
		{src: `router("r", by = "a", routes = {"x": START})`, frag: `router "r": routes["x"] cannot be START`},
		{src: `router("r", by = 1, routes = {"x": a})`, frag: `router "r": by must be an expression string or a function of r, got int 1`},
		{src: `router("r", cases = [])`, frag: `router "r": cases must have at least one (condition, step) pair`},
		{src: `router("r", cases = "a")`, frag: `router "r": cases must be a list of (condition, step) pairs, got string "a"`},
		{src: `router("r", cases = [("a",)])`, frag: `router "r": cases[0] must be a (condition, step) pair, got tuple ("a",)`},
		{src: `router("r", cases = [("a", b), ["a", b]])`, frag: `router "r": cases[1] must be a (condition, step) pair, got list ["a", <step b>]`},
		{src: `router("r", cases = [(1, b)])`, frag: `router "r": cases[0] condition must be an expression string or a function of r, got int 1`},
		{src: `router("r", cases = [("a", 2)])`, frag: `router "r": cases[0] target must be a step or a step name, got int 2`},
		{src: `router("r", cases = [("a", b)], default = 3)`, frag: `router "r": default must be a step or a step name, got int 3`},
		{src: `router("r", cases = [("a", b)], retries = 1)`, frag: `router: unexpected keyword argument "retries"`},
		{src: `router("r", cases = [("a", b)], defualt = a)`, frag: `router: unexpected keyword argument "defualt"`, hint: `did you mean "default"?`},
		{src: `router("r", "a")`, frag: `router: takes 1 positional argument (name); give the others by keyword`},
		{src: `router(1, cases = [("a", b)])`, frag: `router: name must be a string, got int 1`},
		{src: `router("r", cases = [("a", b)], max_visits = 0)`, frag: `router "r": max_visits must be at least 1, got 0`},
	})
}

func TestLoopBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `loop("l", body = [a], until = "f")`, frag: `loop "l": missing max_iterations=: every loop needs a bound (an int >= 1)`},
		{src: `loop("l", max_iterations = 3)`, frag: `loop "l": missing body=, the list of steps to repeat`},
		{src: `loop("l", body = [a], max_iterations = 0)`, frag: `loop "l": max_iterations must be at least 1, got 0`},
		{src: `loop("l", body = [a], max_iterations = "3")`, frag: `loop "l": max_iterations must be an int, got string "3"`},
		{src: `loop("l", body = [], max_iterations = 3)`, frag: `loop "l": body must have at least one step`},
		{src: `loop("l", body = "a", max_iterations = 3)`, frag: `loop "l": body must be a list of steps, got string "a"`},
		{src: `loop("l", body = [a, 1], max_iterations = 3)`, frag: `loop "l": body[1] must be a step, got int 1`},
		{src: `loop("l", body = [END], max_iterations = 3)`, frag: `loop "l": body[0] cannot be END`},
		{src: `loop("l", body = [a, a], max_iterations = 3)`, frag: `loop "l": step "a" appears twice in body`},
		{src: `l = loop("l", body = [a], max_iterations = 3); loop("m", body = [a], max_iterations = 3)`, frag: `loop "m": step "a" is already in the body of "l"`, at: "4:48"},
		{src: `loop("l", body = [a], max_iterations = 3, retries = 2)`, frag: `loop: unexpected keyword argument "retries"`},
		{src: `loop("l", body = [a], max_iteration = 3)`, frag: `loop: unexpected keyword argument "max_iteration"`, hint: `did you mean "max_iterations"?`},
		{src: `loop("l", [a])`, frag: `loop: takes 1 positional argument (name); give the others by keyword`},
		{src: `loop("l", body = [a], max_iterations = 3, timeout = "1")`, frag: `loop "l": timeout must be a positive duration`},
		{src: `loop("l", body = [a], max_iterations = 3, exhausted = True)`, frag: `loop "l": exhausted must be "succeed" or "fail", got bool True`},
		{src: `loop("l", body = [a], max_iterations = 3, exhausted = "error")`, frag: `loop "l": exhausted must be one of "succeed", "fail", got "error"`},
	})
}

func TestMapBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `map("m", body = [a])`, frag: `map "m": missing over=, the expression giving the list to map over`},
		{src: `map("m", over = "inputs.xs")`, frag: `map "m": missing body=, the list of steps to run per item`},
		{src: `map("m", over = ["x"], body = [a])`, frag: `map "m": over must be an expression string or a function of r, got list ["x"]`},
		{src: `map("m", over = "inputs.xs", body = [a], concurrency = 0)`, frag: `map "m": concurrency must be at least 1, got 0`},
		{src: `map("m", over = "inputs.xs", body = [a], item_var = "Item")`, frag: `map "m": item_var must be a name matching [a-z_][a-z0-9_]*, got string "Item"`},
		{src: `map("m", over = "inputs.xs", body = [a], item_var = 1)`, frag: `map "m": item_var must be a name matching [a-z_][a-z0-9_]*, got int 1`},
		{src: `map("m", over = "inputs.xs", body = [a], empty = "none")`, frag: `map "m": empty must be one of "run", "skip", got "none"`},
		{src: `map("m", over = "inputs.xs", body = a.name)`, frag: `map "m": body must be a list of steps, got string "a"`},
		{src: `map("m", over = "inputs.xs", body = [a], parallel = 2)`, frag: `map: unexpected keyword argument "parallel"`},
		{src: `map("m", over = "inputs.xs", body = [a], max_items = 0)`, frag: `max_items`},
		{src: `map("m", over = "inputs.xs", body = [a], concurency = 2)`, frag: `map: unexpected keyword argument "concurency"`, hint: `did you mean "concurrency"?`},
		{src: `map("m", "inputs.xs")`, frag: `map: takes 1 positional argument (name); give the others by keyword`},
		{src: `map("m", over = "inputs.xs", body = [START])`, frag: `map "m": body[0] cannot be START`},
	})
}

// A builtin called from a library reports the library's line, with the
// user's call in the trace.
func TestBadInLibrary(t *testing.T) {
	_, err := lang.LoadSource("flow.star", []byte(`load("@std/patterns.star", "fix_loop")
w = step("w")
fix_loop(w, "fix")
`), lang.Options{})
	var ge *graphir.Error
	if !errors.As(err, &ge) {
		t.Fatalf("got %v", err)
	}
	d := check.FromError(ge)
	if got, want := d.Pos.String(), "flow.star:3:1"; got != want {
		t.Errorf("at %s, want %s (%s)", got, want, d)
	}
	if !strings.Contains(d.Message, `edge: dst must be a step, got string "fix"`) {
		t.Errorf("message %q", d.Message)
	}
	if len(d.Trace) != 1 || !strings.HasPrefix(d.Trace[0], "@std/patterns.star:") {
		t.Errorf("trace %q", d.Trace)
	}
}

// A step value from one load cannot be used in another.
func TestStepFromAnotherFlow(t *testing.T) {
	run := func(b *graphir.Builder, src string, pre starlark.StringDict) (starlark.StringDict, error) {
		thread := &starlark.Thread{Name: "test"}
		builtins.SetBuilder(thread, b)
		env := starlark.StringDict{}
		for k, v := range builtins.Predeclared() {
			env[k] = v
		}
		for k, v := range pre {
			env[k] = v
		}
		return starlark.ExecFileOptions(graphir.FileOptions, thread, "x.star", src, env)
	}
	g1, err := run(graphir.NewBuilder("one.star", "."), `s = step("s")`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		`edge(s, END)`,
		`edge(START, s)`,
		`chain(START, s)`,
		`loop("l", body = [s], max_iterations = 2)`,
		`router("r", cases = [("True", s)])`,
	} {
		_, err = run(graphir.NewBuilder("two.star", "."), src, starlark.StringDict{"s": g1["s"]})
		if err == nil || !strings.Contains(err.Error(), `step "s" belongs to another flow`) {
			t.Errorf("%s: got %v, want a step from another flow", src, err)
		}
	}
	// Without a builder (say, from a run-time function) the builtins refuse.
	thread := &starlark.Thread{Name: "run"}
	_, err = starlark.ExecFileOptions(graphir.FileOptions, thread, "x.star", `step("late")`, builtins.Predeclared())
	if err == nil || !strings.Contains(err.Error(), "step: can only be called while a flow is loading") {
		t.Errorf("got %v", err)
	}
}

func TestRangeLimit(t *testing.T) {
	d, ok := diag(t, "x = range(20000000)\n")
	if !ok || d.Code != "load_error" || d.Pos.String() != "flow.star:1:5" ||
		!strings.Contains(d.Message, "range: 20000000 elements is more than the limit of 10000000") {
		t.Errorf("got %v", d)
	}
	if _, err := load("x = range(0, 20000000, 2)\ny = range(3)\n"); err != nil {
		t.Errorf("range at the limit: %v", err)
	}
}

// mustLoad loads src and fails on an error.
func mustLoad(t *testing.T, src string) *graphir.Graph {
	t.Helper()
	g, err := load(src)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return g
}

func srcs(ts []*graphir.Template) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Src)
	}
	return out
}

// Durations take days: "30d", "1d12h" (docs/language.md).
func TestDurationDays(t *testing.T) {
	g := mustLoad(t, `flow(timeout = "30d")
s = step("s", run = ["true"], timeout = "1d12h", retries = 1, backoff = "1d")
`)
	if g.Timeout != 30*24*time.Hour {
		t.Errorf("flow timeout %v, want 720h", g.Timeout)
	}
	for _, n := range g.Steps() {
		if n.Name == "s" && (n.Timeout != 36*time.Hour || n.Backoff != 24*time.Hour) {
			t.Errorf("step timeout %v backoff %v, want 36h and 24h", n.Timeout, n.Backoff)
		}
	}
}

func TestFlowParams(t *testing.T) {
	g := mustLoad(t, `flow(
    name = "demo",
    description = "what it does",
    inputs = {"topic": "loops", "n": 3, "need": None, "opts": {"a": [1, 2]}},
    output = "last.stdout",
    max_visits = 5,
    timeout = "1h30m",
)
last = step("last", run = ["echo"])
`)
	want := []input{{"topic", `"loops"`, false, "string"}, {"n", "3", false, "int"}, {"need", "", true, "any"}, {"opts", `{"a": [1, 2]}`, false, "dict"}}
	inputs := inputsOf(g)
	if diff := cmp.Diff(want, inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	if g.Name != "demo" || g.Description != "what it does" || g.MaxVisits != 5 || g.Timeout != 90*time.Minute {
		t.Errorf("header: %q %q %d %v", g.Name, g.Description, g.MaxVisits, g.Timeout)
	}
	if g.Output.Src != "last.stdout" || g.Output.Pos.String() != "flow.star:5:15" || !g.Output.Exact {
		t.Errorf("output %q at %s", g.Output.Src, g.Output.Pos)
	}
	if g.Pos.String() != "flow.star:1:1" {
		t.Errorf("flow() at %s", g.Pos)
	}
	if g.Input("need") == nil || g.Input("nope") != nil {
		t.Error("Graph.Input")
	}
	// Without flow(), the name comes from the file.
	if g := mustLoad(t, `step("x")`); g.Name != "flow" || g.Pos.IsValid() {
		t.Errorf("default name %q, pos %s", g.Name, g.Pos)
	}
	// A function as output.
	g = mustLoad(t, "flow(output = lambda r: r.x)\nx = step(\"x\")\n")
	if !g.Output.User || g.Output.Func == nil {
		t.Errorf("output %+v", g.Output)
	}
}

type input struct {
	Name     string
	Default  string
	Required bool
	Type     string
}

func inputsOf(g *graphir.Graph) []input {
	var inputs []input
	for _, in := range g.Inputs {
		d := ""
		if in.Default != nil {
			d = in.Default.String()
		}
		inputs = append(inputs, input{in.Name, d, in.Required, in.Type})
	}
	return inputs
}

// TestInputDecl covers input(): a type given or inferred from the default,
// help and choices, and a plain default meaning input(default).
func TestInputDecl(t *testing.T) {
	g := mustLoad(t, `flow(inputs = {
    "version": input("latest", help = "release tag"),
    "n": input(type = "int"),
    "ratio": input(0.5),
    "flag": input(False),
    "xs": input([1], help = "numbers"),
    "opts": input({"a": 1}),
    "blob": input(),
    "env": input("dev", choices = ["dev", "prod"]),
    "plain": 7,
    "tuple": input((1, 2)),
    "req_str": input(type = "string", help = "who"),
    "mismatch": input("3", type = "int"),
})
s = step("s")
`)
	want := []input{
		{"version", `"latest"`, false, "string"}, {"n", "", true, "int"}, {"ratio", "0.5", false, "float"},
		{"flag", "False", false, "bool"}, {"xs", "[1]", false, "list"}, {"opts", `{"a": 1}`, false, "dict"},
		{"blob", "", true, "any"}, {"env", `"dev"`, false, "string"}, {"plain", "7", false, "int"},
		{"tuple", "(1, 2)", false, "list"}, {"req_str", "", true, "string"},
		// The default's type is not the declared one: the checker reports it.
		{"mismatch", `"3"`, false, "int"},
	}
	if diff := cmp.Diff(want, inputsOf(g)); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	if in := g.Input("version"); in.Help != "release tag" || in.Pos.String() != "flow.star:2:16" {
		t.Errorf("version: help %q at %s", in.Help, in.Pos)
	}
	if in := g.Input("plain"); in.Pos.String() != "flow.star:1:1" {
		t.Errorf("a plain default is declared at the flow() call, got %s", in.Pos)
	}
	if in := g.Input("env"); len(in.Choices) != 2 || in.Choices[1].String() != `"prod"` {
		t.Errorf("env choices %v", in.Choices)
	}
	// input() is a value that only flow(inputs=) takes.
	if _, err := load(`x = input(1)
s = step("s", flow = "c.star", inputs = {"x": x})`); err == nil || !strings.Contains(err.Error(), "input") {
		t.Errorf("input() passed as a child input: %v", err)
	}
}

func TestInputBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `input(type = "integer")`, frag: `input: type must be one of "string", "int", "float", "bool", "list", "dict", "any", got "integer"`},
		{src: `input(type = "strng")`, frag: `got "strng"`, hint: `did you mean "string"?`},
		{src: `input(type = int)`, frag: `input: type must be a string such as "int", got builtin_function_or_method`},
		{src: `input(1, 2)`, frag: `input: takes 1 positional argument (default); give the others by keyword`},
		{src: `input(helpp = "x")`, frag: `input: unexpected keyword argument "helpp"`, hint: `did you mean "help"?`},
		{src: `input(help = 3)`, frag: `input: help must be a string, got int 3`},
		{src: `input("a", choices = "ab")`, frag: `input: choices must be a list of values, got string "ab"`},
		{src: `input("a", choices = [])`, frag: `input: choices must not be empty`},
		{src: `input("a", choices = ["a", 2])`, frag: `input: choices[1] must be a string like the input, got int 2`},
		{src: `input(a)`, frag: `input: default: a step is not JSON-representable`},
	})
}

func TestStepParams(t *testing.T) {
	g := mustLoad(t, `build = step(
    "build",
    run = ["go", "build", "{{ inputs.pkg }}"],
    args = ["-o", "out/{{ self.visits }}"],
    env = {"Z": "last", "A": "{{ inputs.a }}", "M": "m"},
    stdin = "data",
    dir = "src",
    max_visits = 3,
    retries = 2,
    backoff = "250ms",
    timeout = "10m",
    join = "or",
)
sh = step("sh", shell = "echo hi | wc -c")
f = step("f", fn = lambda r: 1, join = "and")
kid = step("kid", flow = "child.star", inputs = {"a": "{{ build.stdout }}", "b": "x-{{ f }}", "n": 3, "l": [1, "two"], "none": None})
noop = step("noop")
`)
	b := g.Node("build")
	if b.Kind != graphir.KindTask || b.Kind.String() != "task" {
		t.Errorf("kind %v", b.Kind)
	}
	if diff := cmp.Diff([]string{"go", "build", "{{ inputs.pkg }}", "-o", "out/{{ self.visits }}"}, srcs(b.Argv)); diff != "" {
		t.Errorf("argv (-want +got):\n%s", diff)
	}
	var env []string
	for _, e := range b.Env {
		env = append(env, e.Name+"="+e.Value.Src)
	}
	if diff := cmp.Diff([]string{"A={{ inputs.a }}", "M=m", "Z=last"}, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if b.Stdin.Src != "data" || b.Dir.Src != "src" {
		t.Errorf("stdin %q dir %q", b.Stdin.Src, b.Dir.Src)
	}
	if b.MaxVisits != 3 || b.Retries != 2 || b.Backoff != 250*time.Millisecond || b.Timeout != 10*time.Minute {
		t.Errorf("bounds: %d %d %v %v", b.MaxVisits, b.Retries, b.Backoff, b.Timeout)
	}
	if b.Join != graphir.JoinOr || !b.JoinSet {
		t.Errorf("join %v set %v", b.Join, b.JoinSet)
	}
	if x := b.Argv[2].Whole(); x == nil || x.Src != "inputs.pkg" || x.Refs[0].Name != "inputs" || x.Refs[0].Attr != "pkg" {
		t.Errorf("argv[2] hole %+v", x)
	}

	sh := g.Node("sh")
	if sh.Kind != graphir.KindShell || sh.Shell.Src != "echo hi | wc -c" || sh.Backoff != time.Second || sh.Join != graphir.JoinAnd || sh.JoinSet {
		t.Errorf("sh: %v %q %v %v", sh.Kind, sh.Shell.Src, sh.Backoff, sh.JoinSet)
	}
	if f := g.Node("f"); f.Kind != graphir.KindFn || f.Fn == nil || !f.JoinSet || f.Join != graphir.JoinAnd {
		t.Errorf("f: %v", f.Kind)
	}
	if n := g.Node("noop"); n.Kind != graphir.KindNoop || n.Argv != nil {
		t.Errorf("noop: %v", n.Kind)
	}

	kid := g.Node("kid")
	if kid.Kind != graphir.KindSubflow || kid.Subflow.Flow.Src != "child.star" {
		t.Errorf("kid: %v %q", kid.Kind, kid.Subflow.Flow.Src)
	}
	type in struct {
		Name, Src string
		Whole     bool
	}
	var ins []in
	for _, i := range kid.Subflow.Inputs {
		ins = append(ins, in{i.Name, i.Value.Src, i.Value.Whole() != nil})
	}
	want := []in{
		{"a", "{{ build.stdout }}", true},
		{"b", "x-{{ f }}", false},
		{"n", "3", true},
		{"l", `[1, "two"]`, true},
		{"none", "None", true},
	}
	if diff := cmp.Diff(want, ins); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	// The child was not found: recorded for the checker, not a load error.
	if kid.Subflow.ChildErr == nil || kid.Subflow.ChildErr.Code != "subflow_not_found" {
		t.Errorf("child error %v", kid.Subflow.ChildErr)
	}
}

func TestRouterParams(t *testing.T) {
	g := mustLoad(t, `a = step("a")
r = router(
    "r",
    by = "a.label",
    routes = {"x": a, "y": "later", "z": END, "w": "nowhere"},
    default = ABORT,
    max_visits = 2,
)
s = router("s", cases = [("a.n > 1", "later"), (lambda r: True, a)], default = "later", join = "or")
later = step("later")
`)
	type target struct {
		Label, To string
		Line, Col int
		Edge      bool
	}
	describe := func(label string, tg graphir.Target) target {
		to := tg.Name
		if tg.ID != graphir.None {
			to = g.Nodes[tg.ID].Name
		}
		return target{label, to, tg.Pos.Line, tg.Pos.Col, tg.ID != graphir.None}
	}
	r := g.Node("r")
	var got []target
	for _, rt := range r.Router.Routes {
		got = append(got, describe(rt.Label, rt.Target))
	}
	got = append(got, describe("default", *r.Router.Default))
	want := []target{
		{"x", "a", 2, 5, true},
		{"y", "later", 5, 29, true},
		{"z", "END", 2, 5, true},
		{"w", "nowhere", 5, 53, false},
		{"default", "ABORT", 2, 5, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	if r.Router.By.Src != "a.label" || r.MaxVisits != 2 {
		t.Errorf("by %q max_visits %d", r.Router.By.Src, r.MaxVisits)
	}

	s := g.Node("s")
	got = nil
	for i, c := range s.Router.Cases {
		got = append(got, describe(fmt.Sprint(c.When), c.Target))
		if c.Target.Edge < 0 || g.Edges[c.Target.Edge].Case != i {
			t.Errorf("case %d edge %d", i, c.Target.Edge)
		}
	}
	got = append(got, describe("default", *s.Router.Default))
	want = []target{
		{"a.n > 1", "later", 9, 39, true},
		{"<function lambda>", "a", 9, 5, true},
		{"default", "later", 9, 81, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cases (-want +got):\n%s", diff)
	}
	if !s.JoinSet || s.Join != graphir.JoinOr {
		t.Error("router join")
	}
	// The router's out-edges are its routes, cases and default.
	var out []string
	for _, id := range r.Out {
		e := g.Edges[id]
		out = append(out, fmt.Sprintf("%s:%s", g.Nodes[e.To].Name, routeOf(e)))
	}
	if diff := cmp.Diff([]string{"a:x", "later:y", "END:z", "ABORT:default"}, out); diff != "" {
		t.Errorf("router edges (-want +got):\n%s", diff)
	}
}

func routeOf(e *graphir.Edge) string {
	switch {
	case e.Default:
		return "default"
	case e.Case >= 0:
		return fmt.Sprint("case ", e.Case)
	}
	return e.Label
}

func TestLoopMapParams(t *testing.T) {
	g := mustLoad(t, `a = step("a")
b = step("b")
l = loop("l", body = [a, b], until = lambda it: True, max_iterations = 4, max_visits = 2, timeout = "5m")
c = step("c", run = ["echo", "{{ it }}"])
m = map("m", over = "inputs.xs", body = c, concurrency = 8, item_var = "it", join = "or")
d = step("d")
n = map("n", over = lambda r: [1], body = [d])
chain(START, l, m, n, END)
`)
	l := g.Node("l")
	body := func(n *graphir.Node) []string {
		var out []string
		for _, id := range n.Body {
			out = append(out, g.Nodes[id].Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"a", "b"}, body(l)); diff != "" {
		t.Errorf("loop body (-want +got):\n%s", diff)
	}
	if l.Loop.MaxIterations != 4 || l.Loop.Until == nil || l.MaxVisits != 2 || l.Timeout != 5*time.Minute {
		t.Errorf("loop: %d %v %d %v", l.Loop.MaxIterations, l.Loop.Until, l.MaxVisits, l.Timeout)
	}
	for _, name := range []string{"a", "b"} {
		if p := g.Node(name).Parent; p != l.ID {
			t.Errorf("%s parent %d, want %d", name, p, l.ID)
		}
	}
	if diff := cmp.Diff([]graphir.NodeID{g.Node("a").ID, g.Node("b").ID}, g.Scope(l.ID)); diff != "" {
		t.Errorf("scope (-want +got):\n%s", diff)
	}
	m := g.Node("m")
	if diff := cmp.Diff([]string{"c"}, body(m)); diff != "" {
		t.Errorf("map body (-want +got):\n%s", diff)
	}
	if m.Map.Over.Src != "inputs.xs" || m.Map.Concurrency != 8 || m.Map.ItemVar != "it" || m.Join != graphir.JoinOr || g.Node("c").Parent != m.ID {
		t.Errorf("map: %q %d %q", m.Map.Over.Src, m.Map.Concurrency, m.Map.ItemVar)
	}
	n := g.Node("n")
	if n.Map.Concurrency != 4 || n.Map.ItemVar != "item" || !n.Map.Over.User {
		t.Errorf("map defaults: %d %q %v", n.Map.Concurrency, n.Map.ItemVar, n.Map.Over.User)
	}
	if !g.Within(g.Node("d").ID, n.ID) || g.Within(g.Node("d").ID, m.ID) {
		t.Error("Within")
	}
}

func TestStepValue(t *testing.T) {
	g := mustLoad(t, `a = step("a", run = ["true"])
r = router("r", cases = [("True", a)])
names = [a.name, a.kind, r.kind, START.name, END.kind, str(a), str(END), type(a)]
step("_".join([n.replace("<", "").replace(">", "").replace(" ", "") for n in names]))
d = {a: 1}
if a != r and a == a and dir(a) == ["kind", "name"] and hasattr(a, "kind") and not hasattr(a, "nope"):
    pass
`)
	_ = g
	got := g.StepNames()[2]
	if want := "a_task_router_START_end_stepa_END_step"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Nodes and edges point at the start of the user's call, even when a
// library made them; the stack keeps the library's frames.
func TestPositions(t *testing.T) {
	g, err := lang.LoadSource("flow.star", []byte(`load("@std/patterns.star", "fan_out")
src = step("src")
x,   y = step("x"), step("y")
join =   step("join")
fan_out(src, [x, y],
        join)
if True:
        chain(START,
              src)
`), lang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type at struct {
		What, Pos string
		Frames    int
	}
	var got []at
	for _, n := range g.Steps() {
		got = append(got, at{n.Name, n.Pos.String(), len(n.Stack)})
	}
	for _, e := range g.Edges {
		got = append(got, at{g.Nodes[e.From].Name + "->" + g.Nodes[e.To].Name, e.Pos.String(), len(e.Stack)})
	}
	want := []at{
		{"src", "flow.star:2:7", 1},
		{"x", "flow.star:3:10", 1},
		{"y", "flow.star:3:21", 1},
		{"join", "flow.star:4:10", 1},
		{"src->x", "flow.star:5:1", 2},
		{"x->join", "flow.star:5:1", 2},
		{"src->y", "flow.star:5:1", 2},
		{"y->join", "flow.star:5:1", 2},
		{"START->src", "flow.star:8:9", 1},
		{"join->END", "", 0}, // none: not implicit once edges exist
	}
	want = want[:len(want)-1]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("positions (-want +got):\n%s", diff)
	}
	e := g.Edges[0]
	if f := e.Stack[1]; f.Func != "fan_out" || f.Pos.File != "@std/patterns.star" {
		t.Errorf("inner frame %+v", f)
	}
	if f := e.Stack[0]; f.Func != "<toplevel>" || f.Pos.String() != "flow.star:5:1" {
		t.Errorf("outer frame %+v", f)
	}
}

// The parameters of the run semantics in docs/runs.md: retry_when, wait=, exhausted=,
// join modes and on_exit.
func TestRunSemanticsParams(t *testing.T) {
	g := mustLoad(t, `flow(on_exit = "cleanup")
fetch = step("fetch", run = ["curl", "x"], retries = 3, retry_when = "fetch.exit_code == 75 or fetch.code == 'timeout'")
pause = step("pause", wait = "{{ 2 * self.visits }}s")
fixed = step("fixed", wait = "1m30s", join = "done")
all = step("all_in", join = "all")
b = step("b")
l = loop("l", body = [b], until = lambda it: True, max_iterations = 2, exhausted = "fail")
cleanup = step("cleanup", fn = lambda r: r.run.status)
chain(START, fetch, pause, fixed, all, l, END)
`)
	f := g.Node("fetch")
	if f.RetryWhen == nil || f.RetryWhen.Src != "fetch.exit_code == 75 or fetch.code == 'timeout'" {
		t.Errorf("retry_when %+v", f.RetryWhen)
	}
	if p := g.Node("pause"); p.Kind != graphir.KindWait || p.Wait.IsLiteral() || p.Kind.String() != "wait" {
		t.Errorf("pause: kind %s wait %+v", p.Kind, p.Wait)
	}
	if x := g.Node("fixed"); x.Wait.Src != "1m30s" || x.Join != graphir.JoinDone {
		t.Errorf("fixed: %+v", x)
	}
	if x := g.Node("all_in"); x.Join != graphir.JoinAll || x.Join.String() != "all" {
		t.Errorf("all_in join %s", x.Join)
	}
	if l := g.Node("l"); !l.Loop.ExhaustFail {
		t.Error("exhausted=\"fail\" not recorded")
	}
	if g.OnExit != g.Node("cleanup").ID || g.OnExitName != "cleanup" {
		t.Errorf("on_exit %d %q", g.OnExit, g.OnExitName)
	}
	// The exit handler is left out of the implicit chain.
	if in := g.Node("cleanup").In; len(in) != 0 {
		t.Errorf("cleanup has %d in-edges", len(in))
	}
	g = mustLoad(t, "a = step(\"a\")\nc = step(\"c\")\nflow(on_exit = c)\n")
	if g.OnExit != g.Node("c").ID || len(g.Node("c").In)+len(g.Node("c").Out) != 0 {
		t.Errorf("on_exit by step: %d, edges %v %v", g.OnExit, g.Node("c").In, g.Node("c").Out)
	}
	if g := mustLoad(t, `flow(on_exit = "nope")`+"\nstep(\"a\")\n"); g.OnExit != graphir.None || g.OnExitName != "nope" {
		t.Errorf("unresolved on_exit %d %q", g.OnExit, g.OnExitName)
	}
}

func TestToolBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `tool("t", run = "echo hi")`, frag: `tool "t": run must be a list of strings, got string "echo hi"`,
			hint: `write run = ["echo", "hi"] (an argv, no shell), or shell = "echo hi"`},
		{src: `tool("t", run = [])`, frag: `tool "t": run must name a command: want a non-empty list of strings`},
		{src: `tool("t", run = ["echo"], shell = "echo")`, frag: `tool "t": give one of run, shell, fn and flow, not several`},
		{src: `tool("t")`, frag: `tool "t": a tool needs run= (an argv), shell= (a script), fn= (a function of args) or flow= (a child flow) to say what it does`},
	})
}
