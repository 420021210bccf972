package vm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// snapshotFlows are run straight through and suspended and restored over
// and over; both must give the same result.
var snapshotFlows = []struct {
	name     string
	files    map[string]string
	parallel int
}{
	{name: "loop with history, floats and tuples", files: map[string]string{"flow.star": `
flow(output = "l")
def body_fn(r):
    return {"n": r.loop.iteration, "half": r.loop.iteration / 2.0, "pair": (r.loop.iteration, "x"), "fb": r.loop.feedback}
b = step("b", fn = body_fn)
t = step("t", run = ["echo", "{{ b.n }}"])
u = step("u", fn = lambda r: {"whole": 2.0, "out": r.t.stdout.strip(), "fb": r.b.fb})
l = loop("l", body = [b, t, u], until = "enough", max_iterations = 40)
after = step("after", fn = lambda r: [len(r.l), r.l["whole"]])
chain(START, l, after, END)
def enough(it):
    if len(it.history) == 24:
        return True
    return (False, ("more", it.iteration, 1.5))
`}},
	{name: "back-edge", files: map[string]string{"flow.star": `
build = step("build", run = ["sh", "-c", 'test "$1" -ge 7', "build", "{{ self.visits }}"], max_visits = 9)
fix = step("fix", fn = lambda r: "fixed " + str(r.build.exit_code))
edge(START, build)
edge(build, END)
edge(build, fix, on = "failure")
edge(fix, build)
`}},
	{name: "map in loop", files: map[string]string{"flow.star": `
flow(output = "l")
work = step("work", run = ["sh", "-c", "echo $1", "work", "{{ item }}"])
shape = step("shape", fn = lambda r: {"i": r.index, "x": r.item, "out": r.work.stdout.strip()})
m = map("m", over = "[loop.iteration * 10 + i for i in range(5)]", body = [work, shape], concurrency = 3)
l = loop("l", body = [m], until = lambda it: it.iteration == 4, max_iterations = 10)
chain(START, l, END)
`}},
	{name: "nested loops and a child flow", files: map[string]string{
		"flow.star": `
inner_t = step("inner_t", run = ["echo", "{{ loop.iteration }}"])
inner = loop("inner", body = [inner_t], until = lambda it: it.iteration == 3, max_iterations = 5)
kid = step("kid", flow = "child.star", inputs = {"n": "{{ loop.iteration }}"})
outer = loop("outer", body = [inner, kid], until = lambda it: it.iteration == 3, max_iterations = 5)
chain(START, outer, END)
`,
		"child.star": `
flow(inputs = {"n": None}, output = "out")
t = step("t", run = ["echo", "child {{ inputs.n }}"])
out = step("out", fn = lambda r: r.t.stdout.strip())
`}},
	{name: "routes, joins, retries, exit handler", parallel: 3, files: map[string]string{"flow.star": `
flow(output = "done", on_exit = "cleanup")
src = step("src", fn = lambda r: "billing")
triage = router("triage", by = "src", routes = {"billing": "bill"}, default = "reply")
bill = step("bill", run = ["sh", "-c", "exit 1"], retries = 2, backoff = "1ms")
reply = step("reply", fn = lambda r: "replied")
recover = step("recover", fn = lambda r: "recovered: " + r.bill.error)
a = step("a", run = ["echo", "a"])
b = step("b", run = ["echo", "b"])
done = step("done", fn = lambda r: [r.recover, r.a.stdout, r.b.stdout], join = "and")
cleanup = step("cleanup", fn = lambda r: r.run.status)
edge(START, src)
edge(src, triage)
edge(bill, recover, on = "failure")
edge(reply, END)
edge(recover, a)
edge(recover, b)
edge(a, done)
edge(b, done)
edge(done, END)
`}},
}

// canonical is a result's JSON without what differs between runs of the
// same flow: durations and child run ids, and with parallel steps the
// order of the path.
func canonical(t *testing.T, res *vm.Result, parallel int) any {
	t.Helper()
	b, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	var strip func(x any)
	strip = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			delete(x, "duration_ms")
			delete(x, "run_id")
			for _, v := range x {
				strip(v)
			}
		case []any:
			for _, v := range x {
				strip(v)
			}
		}
	}
	strip(x)
	if parallel > 1 {
		path := x.(map[string]any)["path"].([]any)
		slices.SortFunc(path, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	}
	return x
}

func TestSnapshotRestore(t *testing.T) {
	for _, fl := range snapshotFlows {
		t.Run(fl.name, func(t *testing.T) {
			g := load(t, fl.files)
			opts := vm.Options{Parallel: max(fl.parallel, 1), RunID: "r",
				LoadFlow: func(_ context.Context, path, root string) (*graphir.Graph, error) {
					return lang.Load(path, lang.Options{Root: root})
				}}
			in, err := vm.BindInputs(g, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := vm.Prepare(g)
			want := canonical(t, p.Run(context.Background(), in, opts), fl.parallel)
			for _, every := range []int{1, 2, 5} {
				o := opts
				var res *vm.Result
				suspensions := 0
				for {
					polls := 0
					o.Suspend = func() bool { polls++; return polls > every }
					res = p.Run(context.Background(), in, o)
					if res.Status != vm.Suspended {
						break
					}
					suspensions++
					b, err := res.Snapshot.Encode()
					if err != nil {
						t.Fatal(err)
					}
					if o.Restore, err = p.DecodeSnapshot(b); err != nil {
						t.Fatal(err)
					}
				}
				if suspensions == 0 {
					t.Fatalf("every %d: the run never suspended", every)
				}
				if diff := cmp.Diff(want, canonical(t, res, fl.parallel)); diff != "" {
					t.Errorf("every %d (%d suspensions): straight (-) and restored (+) differ:\n%s", every, suspensions, diff)
				}
			}
		})
	}
}

func TestSnapshotKeepsTypes(t *testing.T) {
	// A value restored from a snapshot is of the same type as the one
	// saved: ints, floats, tuples, lists, dicts (in key order) and None.
	// The run suspends once b's task has left its mark, so before out
	// starts however the driver's rounds fall (counting rounds did not:
	// b could complete in the round that started it).
	mark := filepath.Join(t.TempDir(), "b-ran")
	g := load(t, map[string]string{"flow.star": `
flow(output = "out")
a = step("a", fn = lambda r: {"i": 2, "f": 2.0, "big": 123456789012345678901234567890, "t": (1, "x"), "l": [None, True, {"z": 1, "a": 0.5e-9}]})
b = step("b", run = ["touch", "` + mark + `"])
out = step("out", fn = lambda r: [type(r.a[k]) for k in r.a] + [type(r.a["l"][2]["a"]), type(r.a["t"][0]), r.a])
`})
	in, _ := vm.BindInputs(g, nil)
	p := vm.Prepare(g)
	straight := p.Run(context.Background(), in, vm.Options{Parallel: 1})
	if err := os.Remove(mark); err != nil {
		t.Fatal(err)
	}
	snap := suspendAtMark(t, p, in, vm.Options{Parallel: 1}, mark)
	res := p.Run(context.Background(), in, vm.Options{Parallel: 1, Restore: snap})
	if res.Status != vm.Succeeded {
		t.Fatalf("restored run %s: %v", res.Status, res.Error)
	}
	if !strings.Contains(straight.Output.String(), `"tuple"`) {
		t.Fatalf("the flow lost its tuple: %s", straight.Output)
	}
	if eq, err := starlark.Equal(straight.Output, res.Output); err != nil || !eq {
		t.Errorf("straight %s\nrestored %s", straight.Output, res.Output)
	}
	if got, want := res.Output.String(), straight.Output.String(); got != want {
		t.Errorf("straight %s\nrestored %s", want, got)
	}
}

// suspendAtMark runs p with opts until the file mark exists, then
// suspends it, and returns its snapshot after a trip through its encoding.
func suspendAtMark(t *testing.T, p *vm.Program, in *stdlib.Map, opts vm.Options, mark string) *vm.Snapshot {
	t.Helper()
	opts.Suspend = func() bool {
		_, err := os.Stat(mark)
		return err == nil
	}
	res := p.Run(context.Background(), in, opts)
	if res.Status != vm.Suspended {
		t.Fatalf("status %s, want suspended", res.Status)
	}
	b, err := res.Snapshot.Encode()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := p.DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestSnapshotOfAnotherFlow(t *testing.T) {
	// A snapshot is checked against the program it continues: one of
	// another flow is an error, not a panic.
	g1 := load(t, map[string]string{"flow.star": `
t = step("t", run = ["true"])
u = step("u", fn = lambda r: 1)
`})
	g2 := load(t, map[string]string{"flow.star": `
l = loop("l", body = [step("x", fn = lambda r: 1)], until = lambda it: True, max_iterations = 2)
`})
	in, _ := vm.BindInputs(g1, nil)
	polls := 0
	res := vm.Prepare(g1).Run(context.Background(), in, vm.Options{Parallel: 1, Suspend: func() bool { polls++; return polls > 1 }})
	if res.Status != vm.Suspended {
		t.Fatalf("status %s, want suspended", res.Status)
	}
	b, err := res.Snapshot.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vm.Prepare(g2).DecodeSnapshot(b); err == nil || !strings.Contains(err.Error(), "another flow") {
		t.Errorf("err = %v, want a snapshot of another flow", err)
	}
	if _, err := vm.Prepare(g1).DecodeSnapshot(b[:len(b)/2]); err == nil {
		t.Error("a truncated snapshot decoded")
	}
}

func TestSnapshotDoesNotFit(t *testing.T) {
	// A snapshot whose parts do not fit together is an error, never a
	// panic when it is restored.
	g := load(t, map[string]string{"flow.star": `
work = step("work", run = ["echo", "{{ item }}"])
m = map("m", over = "[1, 2, 3, 4]", body = [work], concurrency = 2)
l = loop("l", body = [m], until = lambda it: it.iteration == 2, max_iterations = 3)
`})
	in, _ := vm.BindInputs(g, nil)
	p := vm.Prepare(g)
	polls := 0
	res := p.Run(context.Background(), in, vm.Options{Parallel: 1, Suspend: func() bool { polls++; return polls > 2 }})
	if res.Status != vm.Suspended {
		t.Fatalf("status %s", res.Status)
	}
	for name, spoil := range map[string]func(s *vm.Snapshot){
		"item out of range": func(s *vm.Snapshot) { s.Frames[len(s.Frames)-1].Index = 9 },
		"no iteration":      func(s *vm.Snapshot) { s.Frames[1].Iteration = 0 },
		"unknown frame":     func(s *vm.Snapshot) { s.Queue[0].Frame = 99 },
		"step of another scope": func(s *vm.Snapshot) {
			s.Queue[0].Node = g.Node("l").ID
		},
		"missing states": func(s *vm.Snapshot) { s.Frames[0].States = nil },
	} {
		b, _ := res.Snapshot.Encode()
		s, err := p.DecodeSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		spoil(s)
		if b, err = s.Encode(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.DecodeSnapshot(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
