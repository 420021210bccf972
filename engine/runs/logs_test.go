package runs

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLogs(t *testing.T) {
	s, g, _ := setup(t, "f.star", `
flow(name = "f")
a = step("a", shell = "echo one; echo two >&2")
b = step("b", shell = "echo three")
chain(START, a, b, END)
`)
	r, err := s.Start(bind(t, g))
	if err != nil {
		t.Fatal(err)
	}
	run(t, r)

	logs := func(step string) ([]Log, error) {
		var got []Log
		err := s.Logs(context.Background(), "last", step, false, &LogHooks{
			OnLog:  func(l *Log) { got = append(got, *l) },
			OnLive: func(*LiveOutput) { t.Error("an ended run's logs are given live") },
		})
		return got, err
	}
	got, err := logs("")
	if err != nil {
		t.Fatal(err)
	}
	want := []Log{
		{Where: "a", Visit: 1, Attempt: 1, Status: "succeeded", Stdout: "one\n", Stderr: "two\n"},
		{Where: "b", Visit: 1, Attempt: 1, Status: "succeeded", Stdout: "three\n"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("logs (-want +got):\n%s", d)
	}
	if got, err = logs("b"); err != nil || len(got) != 1 || got[0].Stdout != "three\n" {
		t.Errorf("logs of b: %+v, %v", got, err)
	}
	_, err = logs("c")
	var ns *NoStepError
	if !errors.As(err, &ns) || ns.Step != "c" || !cmp.Equal(ns.Steps, []string{"a", "b"}) {
		t.Errorf("logs of a step that never ran: %v, want a NoStepError naming a and b", err)
	}
	if err := s.Logs(context.Background(), "zzzz", "", false, &LogHooks{}); err == nil {
		t.Error("logs of a run that is not there: no error")
	}
}
