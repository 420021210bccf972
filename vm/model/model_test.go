package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

const secret = "sk-test-SECRET-0123456789"

func env(vals map[string]string) func(string) string {
	return func(k string) string { return vals[k] }
}

// schemaMessage is the system message that tells a server other than
// OpenAI's the schema (JSON, keys sorted), which it may not enforce.
func schemaMessage(schema string) map[string]any {
	return map[string]any{"role": "system", "content": "Reply with only a JSON value that matches this JSON schema, without a code fence: " + schema}
}

func request(s *modeltest.Server, user string) model.Request {
	return model.Request{
		Endpoint: model.Endpoint{BaseURL: s.BaseURL(), KeyEnv: "TEST_KEY"},
		Model:    "m1",
		Messages: []model.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: user}},
	}
}

func code(err error) string {
	var me *model.Error
	if errors.As(err, &me) {
		return string(me.Code)
	}
	return ""
}

func TestWireRequest(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: `{"file":"a.go"}`, Prompt: 11, Completion: 5}}})
	defer s.Close()
	key := secret
	c := &model.Client{Getenv: func(k string) string {
		if k == "TEST_KEY" {
			return key
		}
		return ""
	}}
	temp := 0.2
	req := request(s, "fix it")
	req.Schema = map[string]any{"type": "object", "properties": map[string]any{"file": map[string]any{"type": "string"}}, "required": []any{"file"}, "additionalProperties": false}
	req.SchemaName = "patch"
	req.Temperature = &temp
	req.MaxTokens = 100
	rep, err := model.Generate(context.Background(), c, req, model.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"file": "a.go"}, rep.Object); diff != "" {
		t.Errorf("object (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(model.Usage{PromptTokens: 11, CompletionTokens: 5}, rep.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	// The key is read when the call is made, not kept.
	key = "sk-other"
	req.Schema = nil
	if _, err := model.Call(context.Background(), c, req, model.Policy{}); err != nil {
		t.Fatal(err)
	}
	got := s.Requests()
	if len(got) != 2 {
		t.Fatalf("got %d requests, want 2", len(got))
	}
	want := map[string]any{
		"model": "m1",
		"messages": []any{
			// A server other than OpenAI's may ignore response_format.
			schemaMessage(`{"additionalProperties":false,"properties":{"file":{"type":"string"}},"required":["file"],"type":"object"}`),
			map[string]any{"role": "system", "content": "be brief"},
			map[string]any{"role": "user", "content": "fix it"},
		},
		"temperature": 0.2,
		"max_tokens":  100.0,
		"response_format": map[string]any{
			"type": "json_schema",
			"json_schema": map[string]any{
				"name":   "patch",
				"strict": true,
				"schema": map[string]any{"type": "object", "properties": map[string]any{"file": map[string]any{"type": "string"}}, "required": []any{"file"}, "additionalProperties": false},
			},
		},
	}
	if diff := cmp.Diff(want, got[0].Body); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if got[0].Path != "/v1/chat/completions" || got[0].Authorization != "Bearer "+secret {
		t.Errorf("path %q, authorization %q", got[0].Path, got[0].Authorization)
	}
	if got[1].Authorization != "Bearer sk-other" {
		t.Errorf("second call used %q, want the key as it was at the call", got[1].Authorization)
	}
	if _, ok := got[1].Body["response_format"]; ok {
		t.Errorf("a text request asked for a response_format: %s", got[1].Raw)
	}
}

func TestNoKeyVariableSendsNoHeader(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "hi"}}})
	defer s.Close()
	c := &model.Client{Getenv: env(nil)}
	if _, err := model.Call(context.Background(), c, request(s, "x"), model.Policy{}); err != nil {
		t.Fatal(err)
	}
	if a := s.Requests()[0].Authorization; a != "" {
		t.Errorf("authorization %q, want none", a)
	}
}

func TestRetries(t *testing.T) {
	type want struct {
		text  string
		code  string
		msg   string
		waits []time.Duration
		reqs  int
	}
	cases := []struct {
		name    string
		replies []modeltest.Reply
		retries int
		want    want
	}{
		{"429 honours Retry-After", []modeltest.Reply{{Status: 429, RetryAfter: "0.05"}, {Content: "ok"}}, 2,
			want{text: "ok", waits: []time.Duration{50 * time.Millisecond}, reqs: 2}},
		{"500 then backoff", []modeltest.Reply{{Status: 500}, {Status: 503}, {Content: "ok"}}, 2,
			want{text: "ok", waits: []time.Duration{time.Millisecond, 2 * time.Millisecond}, reqs: 3}},
		{"retries run out", []modeltest.Reply{{Status: 500}}, 2,
			want{code: "model_error", msg: `model "m1": HTTP 500: scripted status 500`, waits: []time.Duration{time.Millisecond, 2 * time.Millisecond}, reqs: 3}},
		{"400 is not retried", []modeltest.Reply{{Status: 400, Raw: `{"error":{"message":"bad model"}}`}}, 2,
			want{code: "model_error", msg: `model "m1": HTTP 400: bad model`, reqs: 1}},
		{"malformed JSON is retried", []modeltest.Reply{{Raw: `{"choices": [`}, {Content: "ok"}}, 1,
			want{text: "ok", waits: []time.Duration{time.Millisecond}, reqs: 2}},
		{"no retries", []modeltest.Reply{{Status: 429}, {Content: "ok"}}, 0,
			want{code: "model_error", msg: `model "m1": HTTP 429: scripted status 429`, reqs: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := modeltest.New(modeltest.Rule{Replies: tc.replies})
			defer s.Close()
			var waits []time.Duration
			pol := model.Policy{Retries: tc.retries, Backoff: time.Millisecond, OnRetry: func(_ int, _ error, d time.Duration) { waits = append(waits, d) }}
			rep, err := model.Call(context.Background(), &model.Client{Getenv: env(nil)}, request(s, "x"), pol)
			var got want
			if err != nil {
				got.code, got.msg = code(err), err.Error()
			} else {
				got.text = rep.Text
			}
			got.waits, got.reqs = waits, len(s.Requests())
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The client's timeout ends an attempt whose reply is late, and the
// attempt is retried. On synctest's virtual clock (handlerTransport): a
// timeout that did not end it would wait for the late reply, which comes.
func TestSlowReplyTimesOut(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "late", Delay: 10 * time.Second}}})
	defer s.Close()
	synctest.Test(t, func(t *testing.T) {
		c := &model.Client{Getenv: env(nil), Timeout: time.Second, HTTP: &http.Client{Transport: handlerTransport{s.Config.Handler}}}
		_, err := model.Call(context.Background(), c, request(s, "x"), model.Policy{Retries: 1, Backoff: time.Millisecond})
		if code(err) != "model_error" || !strings.Contains(err.Error(), "no reply within 1s") {
			t.Fatalf("got %v, want a timeout model_error", err)
		}
		if n := len(s.Requests()); n != 2 {
			t.Errorf("%d requests, want 2 (a timeout is retried)", n)
		}
	})
}

func TestCancelMidRequest(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "late", Delay: time.Minute}}})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := model.Call(ctx, &model.Client{Getenv: env(nil)}, request(s, "x"), model.Policy{Retries: 2})
		done <- err
	}()
	for len(s.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests after cancel, want 1", n)
	}
}

func TestCancelDuringRetryWait(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Status: 429, RetryAfter: "3600"}}})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	pol := model.Policy{Retries: 2, OnRetry: func(_ int, _ error, d time.Duration) {
		if d != 5*time.Minute {
			t.Errorf("wait %s, want Retry-After capped at 5m", d)
		}
		cancel()
	}}
	_, err := model.Call(ctx, &model.Client{Getenv: env(nil)}, request(s, "x"), pol)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// A step's timeout bounds the waits between attempts as it does each
// attempt: a server asking for a longer wait fails the call at once,
// saying so, rather than holding the step past its timeout (issue 26).
func TestRetryAfterPastTimeout(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Status: 429, RetryAfter: "3600"}}})
	defer s.Close()
	pol := model.Policy{Retries: 2, Timeout: time.Second, OnRetry: func(int, error, time.Duration) {
		t.Error("the call waited")
	}}
	_, err := model.Call(context.Background(), &model.Client{Getenv: env(nil)}, request(s, "x"), pol)
	if code(err) != "model_error" || !strings.Contains(err.Error(), "the server asked to retry after 5m0s, longer than the step's timeout of 1s") {
		t.Fatalf("got %v", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func schemaFile() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"file": map[string]any{"type": "string"}}, "required": []any{"file"}}
}

func TestRepairRetry(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: `{"file": 3}`, Prompt: 10, Completion: 2}, {Content: "```json\n{\"file\": \"a.go\"}\n```", Prompt: 20, Completion: 3}}})
	defer s.Close()
	req := request(s, "fix")
	req.Schema = schemaFile()
	rep, err := model.Generate(context.Background(), &model.Client{Getenv: env(nil)}, req, model.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"file": "a.go"}, rep.Object); diff != "" {
		t.Errorf("object (-want +got):\n%s", diff)
	}
	if rep.Usage != (model.Usage{PromptTokens: 30, CompletionTokens: 5}) {
		t.Errorf("usage %+v, want the sum of both attempts", rep.Usage)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	msgs := reqs[1].Body["messages"].([]any)
	want := []any{
		schemaMessage(`{"properties":{"file":{"type":"string"}},"required":["file"],"type":"object"}`),
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": "fix"},
		map[string]any{"role": "assistant", "content": `{"file": 3}`},
		map[string]any{"role": "user", "content": `Your reply does not match the required JSON schema: $.file: want a string, got 3. Reply again with only a JSON value that matches the schema.`},
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("repair messages (-want +got):\n%s", diff)
	}
}

func TestRepairFails(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "not json"}, {Content: `{"other": 1}`}}})
	defer s.Close()
	req := request(s, "fix")
	req.Schema = schemaFile()
	_, err := model.Generate(context.Background(), &model.Client{Getenv: env(nil)}, req, model.Policy{})
	want := `the reply does not match the schema, also after one repair: $: missing required property "file"`
	if code(err) != "model_error" || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestBudget(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "a", Prompt: 7, Completion: 3}}})
	defer s.Close()
	b := model.NewBudget(15)
	c := &model.Client{Getenv: env(nil)}
	if _, err := model.Call(context.Background(), c, request(s, "x"), model.Policy{Budget: b}); err != nil {
		t.Fatalf("call 1: %v", err)
	}
	// The second call goes with what is left, spends more: it fails,
	// and the run with it.
	rep, err := model.Call(context.Background(), c, request(s, "x"), model.Policy{Budget: b})
	if code(err) != "budget_exceeded" || err.Error() != "token budget of 15 exceeded: this call spent 10 (20 used)" || rep == nil || rep.Usage.Total() != 10 {
		t.Fatalf("call 2: %v, %+v", err, rep)
	}
	_, err = model.Call(context.Background(), c, request(s, "x"), model.Policy{Budget: b})
	if code(err) != "budget_exceeded" || err.Error() != "token budget of 15 exhausted (20 used)" {
		t.Fatalf("got %v", err)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests, want 2: a call past the budget is never sent", n)
	}
}

// heldProvider answers each call with usage once the test lets it go;
// in says a call has arrived.
type heldProvider struct {
	in    chan struct{}
	go_   chan struct{}
	usage model.Usage
}

func (p *heldProvider) Complete(ctx context.Context, req model.Request) (*model.Reply, error) {
	p.in <- struct{}{}
	<-p.go_
	return &model.Reply{Text: "ok", Usage: p.usage}, nil
}

// Parallel calls reserve their max_tokens before they are sent: with two
// calls of 1,000 in flight, a third does not start on a budget of 2,500
// (it waits, here until its context ends); the last call goes with what
// is left, and overrunning it fails budget_exceeded (issue 26: parallel
// calls spent 8 times the budget).
func TestBudgetReserved(t *testing.T) {
	p := &heldProvider{in: make(chan struct{}, 8), go_: make(chan struct{}), usage: model.Usage{PromptTokens: 200, CompletionTokens: 800}}
	b := model.NewBudget(2500)
	req := model.Request{Model: "m", MaxTokens: 1000, Messages: []model.Message{{Role: "user", Content: "x"}}}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := model.Call(context.Background(), p, req, model.Policy{Budget: b})
			errs <- err
		}()
		<-p.in
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	at := &heldProvider{in: make(chan struct{}, 1), go_: make(chan struct{}), usage: p.usage}
	close(at.go_) // (it would answer at once)
	if _, err := model.Call(ctx, at, req, model.Policy{Budget: b}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a third call in parallel: %v, want it waiting for a share", err)
	}
	close(p.go_)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := model.Call(context.Background(), p, req, model.Policy{Budget: b}); code(err) != "budget_exceeded" || b.Used() != 3000 {
		t.Fatalf("the call past what was left: %v (%d used)", err, b.Used())
	}
	if _, err := model.Call(context.Background(), p, req, model.Policy{Budget: b}); code(err) != "budget_exceeded" || len(p.in) != 1 {
		t.Fatalf("a call once the budget is spent: %v (%d sent)", err, len(p.in))
	}
}

// A server that reports a negative usage is not believed: the call fails
// and the budget is not given tokens back (issue 26).
func TestNegativeUsage(t *testing.T) {
	p := &heldProvider{in: make(chan struct{}, 1), go_: make(chan struct{}), usage: model.Usage{PromptTokens: 5, CompletionTokens: -1000}}
	close(p.go_)
	b := model.NewBudget(100)
	_, err := model.Call(context.Background(), p, model.Request{Model: "m"}, model.Policy{Budget: b})
	if code(err) != "model_error" || !strings.Contains(err.Error(), "negative token usage") || b.Used() != 0 {
		t.Fatalf("got %v (%d used)", err, b.Used())
	}
}

func TestCassette(t *testing.T) {
	s := modeltest.New(
		modeltest.Rule{Match: "one", Replies: []modeltest.Reply{{Content: "first"}, {Content: "second"}}},
		modeltest.Rule{Match: "two", Replies: []modeltest.Reply{{Content: `{"file":"b.go"}`}}},
	)
	path := filepath.Join(t.TempDir(), "c.json")
	c := &model.Client{Getenv: env(map[string]string{"TEST_KEY": secret})}
	cas, err := model.OpenCassette(path, false, c)
	if err != nil {
		t.Fatal(err)
	}
	two := request(s, "two")
	two.Schema = schemaFile()
	run := func(p model.Provider) []string {
		var out []string
		for _, r := range []model.Request{request(s, "one"), two, request(s, "one")} {
			rep, err := model.Generate(context.Background(), p, r, model.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rep.Text)
		}
		return out
	}
	want := []string{"first", `{"file":"b.go"}`, "second"}
	if diff := cmp.Diff(want, run(cas)); diff != "" {
		t.Errorf("recording (-want +got):\n%s", diff)
	}
	s.Close() // replay needs no server
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{secret, "TEST_KEY", "Authorization", "127.0.0.1"} {
		if strings.Contains(string(data), bad) {
			t.Errorf("cassette contains %q:\n%s", bad, data)
		}
	}
	rep, err := model.OpenCassette(path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, run(rep)); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	// Runs answered through one cassette (a worker's) each get the tape
	// from its start; a further identical call of one run still misses.
	shared, _ := model.OpenCassette(path, true, nil)
	for _, id := range []string{"r1", "r2"} {
		if diff := cmp.Diff(want, run(shared.ForRun(id))); diff != "" {
			t.Errorf("replay for run %s (-want +got):\n%s", id, diff)
		}
	}
	if _, err := model.Call(context.Background(), shared.ForRun("r1"), request(s, "one"), model.Policy{}); code(err) != "replay_miss" {
		t.Errorf("a third identical call of run r1: %v, want replay_miss", err)
	}
	// A different base URL or key still matches; a different prompt or a
	// further identical call does not.
	other := request(s, "one")
	other.Endpoint = model.Endpoint{BaseURL: "http://elsewhere.invalid/v1", KeyEnv: "X"}
	rep2, _ := model.OpenCassette(path, true, nil)
	if r, err := model.Call(context.Background(), rep2, other, model.Policy{}); err != nil || r.Text != "first" {
		t.Errorf("endpoint change: %v %v", r, err)
	}
	for _, r := range []model.Request{request(s, "three"), request(s, "one"), request(s, "one")} {
		_, err = model.Call(context.Background(), rep2, r, model.Policy{Retries: 2})
	}
	if code(err) != "replay_miss" || !strings.Contains(err.Error(), `has no recorded answer for this request (2 messages, last: "one"); it was asked more often than the cassette recorded`) {
		t.Errorf("got %v, want replay_miss", err)
	}
	rep3, _ := model.OpenCassette(path, true, nil)
	_, err = model.Call(context.Background(), rep3, request(s, "three"), model.Policy{})
	if code(err) != "replay_miss" || !strings.HasSuffix(err.Error(), "; the nearest recording differs in messages[1].content") {
		t.Errorf("got %v, want the field that differs", err)
	}
	if _, err := model.OpenCassette(filepath.Join(t.TempDir(), "no", "such", "c.json"), false, nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a cassette in a missing folder: %v", err)
	}
	if _, err := model.OpenCassette(filepath.Join(t.TempDir(), "missing.json"), true, nil); err == nil {
		t.Error("replay-only with a missing cassette: no error")
	}
	var f struct {
		Exchanges []json.RawMessage `json:"exchanges"`
	}
	json.Unmarshal(data, &f)
	if len(f.Exchanges) != 3 {
		t.Errorf("%d exchanges recorded, want 3", len(f.Exchanges))
	}
}

func TestCassetteConcurrent(t *testing.T) {
	var n atomic.Int32
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "x"}}})
	defer s.Close()
	cas, _ := model.OpenCassette(filepath.Join(t.TempDir(), "c.json"), false, &model.Client{Getenv: env(nil)})
	done := make(chan bool)
	for i := 0; i < 8; i++ {
		go func(i int) {
			if _, err := model.Call(context.Background(), cas, request(s, strings.Repeat("q", i+1)), model.Policy{}); err == nil {
				n.Add(1)
			}
			done <- true
		}(i)
	}
	for i := 0; i < 8; i++ {
		<-done
	}
	if n.Load() != 8 {
		t.Errorf("%d of 8 calls succeeded", n.Load())
	}
}

func TestReadLabel(t *testing.T) {
	labels := []string{"urgent", "routine", "Needs Info"}
	for _, tc := range []struct{ answer, want string }{
		{`{"label": "urgent"}`, "urgent"},
		{"Urgent.", "urgent"},
		{"  **ROUTINE**\n", "routine"},
		{`"needs info"`, "Needs Info"},
		{`{"label": "spam"}`, ""},
		{"I think it is urgent", ""},
	} {
		got, ok := model.ReadLabel(tc.answer, labels)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ReadLabel(%q) = %q, %v; want %q", tc.answer, got, ok, tc.want)
		}
	}
}

func TestReadVerdict(t *testing.T) {
	for _, tc := range []struct{ answer, verdict, reason string }{
		{`{"verdict": "STOP", "reason": "approved"}`, "STOP", "approved"},
		{`{"verdict": "continue", "reason": "too long"}`, "CONTINUE", "too long"},
		{`{"verdict": "UNRELATED", "reason": ""}`, "UNRELATED", ""},
		{"STOP: looks good", "STOP", "looks good"},
		{"Continue.\nshorten it", "CONTINUE", "shorten it"},
		{`{"verdict": "MAYBE"}`, "", ""},
		{"I cannot tell", "", ""},
		{"", "", ""},
	} {
		v, r, ok := model.ReadVerdict(tc.answer)
		if v != tc.verdict || r != tc.reason || ok != (tc.verdict != "") {
			t.Errorf("ReadVerdict(%q) = %q, %q, %v; want %q, %q", tc.answer, v, r, ok, tc.verdict, tc.reason)
		}
	}
}

func TestRouteRequest(t *testing.T) {
	r := model.RouteRequest(model.Request{Model: "m"}, "", "ticket: down", []string{"urgent", "routine"})
	b, _ := model.WireBody(r)
	var got map[string]any
	json.Unmarshal(b, &got)
	want := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "route", "strict": true, "schema": map[string]any{
		"type": "object", "properties": map[string]any{"label": map[string]any{"type": "string", "enum": []any{"urgent", "routine"}}},
		"required": []any{"label"}, "additionalProperties": false}}}
	if diff := cmp.Diff(want, got["response_format"]); diff != "" {
		t.Errorf("response_format (-want +got):\n%s", diff)
	}
}

func TestUsable(t *testing.T) {
	for _, tc := range []struct {
		name string
		decl *model.Decl
		env  map[string]string
		want string
	}{
		{"default without SKEIN_MODEL", nil, nil, "no model configured: set SKEIN_MODEL to a model id (with OPENAI_API_KEY for its key, and SKEIN_BASE_URL for a server other than OpenAI), or declare one with model()"},
		{"default without key", nil, map[string]string{"SKEIN_MODEL": "gpt-4o-mini"}, `model "gpt-4o-mini" at https://api.openai.com/v1: set OPENAI_API_KEY to its API key`},
		{"default with key", nil, map[string]string{"SKEIN_MODEL": "gpt-4o-mini", "OPENAI_API_KEY": "k"}, ""},
		{"local server needs no key", nil, map[string]string{"SKEIN_MODEL": "llama3", "SKEIN_BASE_URL": "http://localhost:11434/v1"}, ""},
		{"OPENAI_BASE_URL", nil, map[string]string{"SKEIN_MODEL": "x", "OPENAI_BASE_URL": "https://example.com/v1"}, `model "x" at https://example.com/v1: set OPENAI_API_KEY to its API key`},
		{"declared key variable", &model.Decl{Name: "fast", Model: "claude", BaseURL: "https://api.anthropic.com/v1/", KeyEnv: "ANTHROPIC_API_KEY"}, nil, `model "fast" (claude) at https://api.anthropic.com/v1/: set ANTHROPIC_API_KEY to its API key`},
		{"bad base_url", &model.Decl{Name: "x", Model: "m", BaseURL: "ftp://h"}, nil, `model "x" (m): base_url "ftp://h" is not an http(s) URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := env(tc.env)
			err := model.Resolve(tc.decl, getenv).Usable(getenv)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The step's timeout ends an attempt whose reply is late (it never comes:
// the server answers only once the client gives up), and a fast reply
// comes within the same timeout. It runs on synctest's virtual clock, the
// server's handler reached without a socket: each late attempt waits out
// its 3s at once, and a timeout that did not end it would wait for the
// hour-late reply, which comes, and fails the test.
func TestPolicyTimeout(t *testing.T) {
	const timeout = 3 * time.Second
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "late", Delay: time.Hour}, {Content: "ok"}}})
	defer s.Close()
	s2 := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "late", Delay: time.Hour}}})
	defer s2.Close()
	synctest.Test(t, func(t *testing.T) {
		c := &model.Client{Getenv: env(nil), HTTP: &http.Client{Transport: handlerTransport{s.Config.Handler}}}
		start := time.Now()
		rep, err := model.Call(context.Background(), c, request(s, "x"), model.Policy{Retries: 1, Backoff: time.Millisecond, Timeout: timeout})
		if err != nil || rep.Text != "ok" {
			t.Fatalf("got %v %v, want the retry's answer after the first attempt timed out", rep, err)
		}
		if took := time.Since(start); took != timeout+time.Millisecond {
			t.Errorf("the call took %s of the virtual clock, want the timeout and the backoff, %s", took, timeout+time.Millisecond)
		}
		_, err = model.Call(context.Background(), c, request(s, "x"), model.Policy{Timeout: timeout})
		if err != nil {
			t.Fatalf("the last reply repeats and is fast: %v", err)
		}
		c2 := &model.Client{Getenv: env(nil), HTTP: &http.Client{Transport: handlerTransport{s2.Config.Handler}}}
		_, err = model.Call(context.Background(), c2, request(s2, "x"), model.Policy{Timeout: timeout})
		if code(err) != string(model.CodeTimeout) || !strings.Contains(err.Error(), "no reply within the step's timeout of 3s") {
			t.Fatalf("got %v", err)
		}
	})
}

// handlerTransport serves each request with h in the caller's goroutine,
// with no socket, so that a synctest bubble's clock moves while the
// handler waits (a goroutine reading a socket is not durably blocked).
// Like a real transport, it fails with the request context's error once
// that is done.
type handlerTransport struct{ h http.Handler }

func (tr handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	tr.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

// TestCassetteNotRegular: a cassette that is a named pipe, a directory or
// a file over MaxCassetteSize is an error naming it, never a read that
// waits for a writer or reads without bound.
func TestCassetteNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(model.MaxCassetteSize + 1); err != nil { // sparse: nothing is written
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct{ path, want string }{
		{fifo, fifo + " is a named pipe, not a regular file"},
		{dir, dir + " is a directory, not a regular file"},
		{big, big + " is larger than the limit of 64 MiB"},
	} {
		for _, replayOnly := range []bool{false, true} {
			_, err := model.OpenCassette(tc.path, replayOnly, nil)
			if err == nil || err.Error() != "cassette: "+tc.want {
				t.Errorf("OpenCassette(%s, %v) = %v, want %q", filepath.Base(tc.path), replayOnly, err, tc.want)
			}
		}
	}
}

// A reply that cannot be read says what the server sent, not the JSON
// decoder's error ("invalid character 'o' in literal null").
func TestParseResponseErrors(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"not json at all", `model "m": the reply is not JSON: not json at all`},
		{"", `model "m": the reply is not JSON`},
		{`{"choices": "many"}`, `model "m": the reply is not a chat completion: {"choices": "many"}`},
		{`{"choices": []}`, `model "m": the reply has no choices: {"choices": []}`},
		{`{"error": {"message": "quota"}, "choices": 3}`, `model "m": the reply is not a chat completion: quota`},
	} {
		_, err := model.ParseResponse("m", []byte(tc.raw))
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseResponse(%q): %v\nwant %s", tc.raw, err, tc.want)
		}
	}
}

// A schema reply cut off at the token limit fails as model_truncated at
// once: its broken JSON is not the model's fault to repair. With partial
// text accepted it is repaired as before, and the error says it was cut.
func TestRepairFailsCutOff(t *testing.T) {
	cut := `{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"file\": \"a."}, "finish_reason": "length"}]}`
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Raw: cut}, {Raw: cut}}})
	defer s.Close()
	req := request(s, "fix")
	req.Schema = schemaFile()
	_, err := model.Generate(context.Background(), &model.Client{Getenv: env(nil)}, req, model.Policy{})
	if code(err) != "model_truncated" || len(s.Requests()) != 1 {
		t.Fatalf("got %v after %d requests, want model_truncated after 1", err, len(s.Requests()))
	}
	req.Partial = true
	_, err = model.Generate(context.Background(), &model.Client{Getenv: env(nil)}, req, model.Policy{})
	if code(err) != "model_error" || !strings.HasSuffix(err.Error(), "(the reply was cut off at the token limit: raise max_tokens)") {
		t.Fatalf("got %v", err)
	}
}

// Prune keeps the exchanges a run answered from or recorded, drops the
// rest, and rewrites the file only when it drops one.
func TestCassettePrune(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "ok"}}})
	defer s.Close()
	path := filepath.Join(t.TempDir(), "tape.json")
	live := &model.Client{Getenv: env(map[string]string{"TEST_KEY": "k"})}
	c, err := model.OpenCassette(path, false, live)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "b", "b"} {
		if _, err := c.Complete(context.Background(), request(s, u)); err != nil {
			t.Fatal(err)
		}
	}
	// The next run asks "b" once and "c": one "b" and the "a" go.
	c, _ = model.OpenCassette(path, false, live)
	for _, u := range []string{"b", "c"} {
		if _, err := c.Complete(context.Background(), request(s, u)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Prune(); n != 2 || err != nil {
		t.Fatalf("Prune: %d, %v", n, err)
	}
	if n, _ := c.Prune(); n != 0 {
		t.Errorf("a second Prune dropped %d", n)
	}
	r, err := model.OpenCassette(path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for u, ok := range map[string]bool{"a": false, "b": true, "c": true} {
		if _, err := r.Complete(context.Background(), request(s, u)); (err == nil) != ok {
			t.Errorf("%q answered: %v, want %v", u, err == nil, ok)
		}
	}
}
