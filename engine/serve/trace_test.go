package serve

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/vm/store"
)

// A run started by a request carrying a W3C traceparent continues the
// caller's trace: its run span is a child of the caller's span.
func TestStartContinuesTrace(t *testing.T) {
	ts := newServer(t, "")
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	ts.srv.svc.Telemetry = p
	ts.session()
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	code, m := ts.req("POST", "/api/runs", `{"flow": "ok.star", "inputs": {"who": "web", "n": 1}}`,
		"Traceparent", "00-"+traceID+"-"+spanID+"-01")
	if code != 201 {
		t.Fatalf("POST /api/runs: %d %v", code, m)
	}
	ts.srv.Wait()
	var found bool
	for _, s := range exp.GetSpans() {
		if s.Parent.SpanID().String() == spanID {
			found = true
			if s.Name != "run ok" || s.SpanContext.TraceID().String() != traceID || !s.Parent.IsRemote() {
				t.Errorf("the caller's child is %s in trace %s", s.Name, s.SpanContext.TraceID())
			}
		}
		if s.SpanContext.TraceID().String() != traceID {
			t.Errorf("span %s is in trace %s, not the caller's", s.Name, s.SpanContext.TraceID())
		}
	}
	if !found {
		t.Errorf("no span continues the caller's: %d spans", len(exp.GetSpans()))
	}
}

// A run a webhook delivery carrying a traceparent queues continues the
// caller's trace.
func TestWebhookContinuesTrace(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	t.Setenv("SKEIN_TEST_PUSH_SECRET", secret)
	ts := newTriggerServer(t, "", map[string]string{"push.star": pushFlow})
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	ts.srv.svc.Telemetry = p
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	marks := filepath.Join(t.TempDir(), "marks")
	code, m := ts.deliver("push", githubPush, "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", sign(secret, githubPush),
		"X-Marks", marks, "Traceparent", "00-"+traceID+"-"+spanID+"-01")
	if code != 202 {
		t.Fatalf("delivery: %d %v", code, m)
	}
	if q := ts.waitQueue(); len(q) != 1 || q[0].State != store.QueueDone {
		t.Fatalf("queue: %+v", q)
	}
	ts.srv.Wait()
	var found bool
	for _, s := range exp.GetSpans() {
		if s.Name == "run push" {
			found = true
			if s.Parent.SpanID().String() != spanID || s.SpanContext.TraceID().String() != traceID {
				t.Errorf("the run's span has parent %s in trace %s, not the caller's", s.Parent.SpanID(), s.SpanContext.TraceID())
			}
		}
	}
	if !found {
		t.Errorf("no run span: %d spans", len(exp.GetSpans()))
	}
}

// A webhook delivery carrying a traceparent, queued by a server that
// stops before it starts the run, is run by the next server on the same
// store, continuing the caller's trace: the trace context is kept with
// the queued item, not in the first server's memory.
func TestQueuedTraceSurvivesRestart(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	t.Setenv("SKEIN_TEST_PUSH_SECRET", secret)
	dir := t.TempDir()
	root := filepath.Join(dir, "flows")
	os.MkdirAll(root, 0o755)
	if err := os.WriteFile(filepath.Join(root, "push.star"), []byte(pushFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	marks := filepath.Join(t.TempDir(), "marks")

	// The first server queues the delivery and stops: its scheduler
	// never runs, so nothing starts the run.
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	first, err := New(Config{Store: st, Roots: []string{root}, By: "alice", Loopback: true, Logf: t.Logf, MaxRuns: 2})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(first.Handler())
	ts := &testServer{t: t, srv: first, http: hs, dir: root}
	code, m := ts.deliver("push", githubPush, "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", sign(secret, githubPush),
		"X-Marks", marks, "Traceparent", "00-"+traceID+"-"+spanID+"-01", "Tracestate", "vendor=blue")
	if code != 202 {
		t.Fatalf("delivery: %d %v", code, m)
	}
	hs.Close()
	first.Close()
	st.Close()

	// The next server runs it.
	st, err = store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	next, err := New(Config{Store: st, Roots: []string{root}, By: "alice", Loopback: true, Logf: t.Logf, MaxRuns: 2})
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	next.svc.Telemetry = p
	scheduled := make(chan struct{})
	go func() { next.Schedule(); close(scheduled) }()
	ts = &testServer{t: t, srv: next, dir: root}
	q := ts.waitQueue()
	next.Close()
	<-scheduled
	next.sched.Wait()
	next.Wait()
	if len(q) != 1 || q[0].State != store.QueueDone {
		t.Fatalf("queue: %+v", q)
	}
	var found bool
	for _, s := range exp.GetSpans() {
		if s.Name == "run push" {
			found = true
			if s.Parent.SpanID().String() != spanID || s.SpanContext.TraceID().String() != traceID || s.SpanContext.TraceState().String() != "vendor=blue" {
				t.Errorf("the run's span has parent %s in trace %s (%s), not the caller's", s.Parent.SpanID(), s.SpanContext.TraceID(), s.SpanContext.TraceState())
			}
		}
	}
	if !found {
		t.Errorf("no run span: %d spans", len(exp.GetSpans()))
	}
}
