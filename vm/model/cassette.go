package model

// This file defines cassettes: model exchanges recorded to a JSON file the
// first time and replayed from it afterwards.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/skeinlang/skein/stdlib"
)

// cassetteVersion is the format of the file.
const cassetteVersion = 1

// MaxCassetteSize is the largest cassette file read: a cassette is read
// whole and decoded in memory, so a bigger one (or a device that never
// ends) is refused rather than read until memory runs out.
const MaxCassetteSize = 64 << 20

// Exchange is one recorded request and the provider's response body. The
// request holds what is matched on (model, messages, schema, parameters);
// no endpoint, header or key is ever part of it.
type Exchange struct {
	Request  Request         `json:"request"`
	Response json.RawMessage `json:"response"`
	// Attempts is the HTTP attempts the recording made for this answer,
	// the failed ones before it included, when more than one: a replay
	// counts them as the recording did.
	Attempts int `json:"attempts,omitempty"`
}

type cassetteFile struct {
	Version   int        `json:"skein_cassette"`
	Exchanges []Exchange `json:"exchanges"`
}

// Cassette is a [Provider] that answers from recorded exchanges. A request
// is matched on its model, messages, schema and parameters; the n-th
// identical request of a run gets the n-th recorded answer to it. A request
// the cassette lacks goes to Inner and is recorded (the file is rewritten
// after each new exchange), or with ReplayOnly fails with CodeReplay. It is
// safe for concurrent use.
type Cassette struct {
	Path       string
	ReplayOnly bool
	Inner      Provider
	// Mask, when set, masks the secrets of the runs it records in the
	// file's text before it is written (a server that echoes a key in its
	// answer).
	Mask func([]byte) []byte

	mu        sync.Mutex
	exchanges []Exchange
	byKey     map[string][]int // key -> indexes into exchanges
	used      map[string]int   // key -> answers handed out this run
	// runs counts the answers handed out to each run of many (a
	// worker's, through ForRun), the latest maxCassetteRuns runs.
	runs  map[string]map[string]int
	order []string // runs' keys, oldest first
	// failed counts the failed attempts of a request being recorded, by
	// run and request key, until an answer comes.
	failed map[string]int
}

// maxCassetteRuns bounds the runs a cassette counts answers for.
const maxCassetteRuns = 1024

// ForRun is the cassette answering run: the n-th identical request of
// that run gets the n-th recorded answer, however many runs (of a
// worker that serves many) asked before.
func (c *Cassette) ForRun(run string) Provider { return runCassette{c, run} }

type runCassette struct {
	c   *Cassette
	run string
}

func (r runCassette) Complete(ctx context.Context, req Request) (*Reply, error) {
	return r.c.complete(ctx, r.run, req)
}

// counts is the answers handed out to run, by request key ("": the one
// run Complete answers for). c.mu is held.
func (c *Cassette) counts(run string) map[string]int {
	if run == "" {
		return c.used
	}
	if m, ok := c.runs[run]; ok {
		return m
	}
	if c.runs == nil {
		c.runs = map[string]map[string]int{}
	}
	if len(c.order) >= maxCassetteRuns {
		delete(c.runs, c.order[0])
		c.order = c.order[1:]
	}
	m := map[string]int{}
	c.runs[run], c.order = m, append(c.order, run)
	return m
}

// OpenCassette reads the cassette at path; a missing file is an empty
// cassette (unless replayOnly, where it is an error).
func OpenCassette(path string, replayOnly bool, inner Provider) (*Cassette, error) {
	c := &Cassette{Path: path, ReplayOnly: replayOnly, Inner: inner, byKey: map[string][]int{}, used: map[string]int{}}
	data, err := readCassette(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && !replayOnly:
		// Refused now rather than after the first model call has been
		// paid for and cannot be recorded.
		if fi, derr := os.Stat(filepath.Dir(path)); derr != nil || !fi.IsDir() {
			return nil, fmt.Errorf("cassette: cannot record to %s: its folder %s does not exist", path, filepath.Dir(path))
		}
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("cassette: %v", err)
	}
	var f cassetteFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("cassette %s: not a Skein cassette: %v", path, err)
	}
	if f.Version != cassetteVersion {
		return nil, fmt.Errorf("cassette %s: format version %d, want %d", path, f.Version, cassetteVersion)
	}
	for _, e := range f.Exchanges {
		c.add(e)
	}
	return c, nil
}

// readCassette reads the cassette file at path if it is a regular file of
// at most [MaxCassetteSize] bytes, as flow files are read.
func readCassette(path string) ([]byte, error) { return readFile(path, MaxCassetteSize) }

// readFile reads the file at path if it is a regular file of at most max
// bytes (a cassette, a stub's answers), saying why not in an error that
// names it.
func readFile(path string, max int64) ([]byte, error) {
	b, err := stdlib.ReadRegularFile(path, max)
	var nr *stdlib.NotRegularError
	var tl *stdlib.TooLargeError
	switch {
	case errors.Is(err, syscall.EISDIR):
		return nil, fmt.Errorf("%s is a directory, not a regular file", path)
	case errors.As(err, &nr):
		return nil, fmt.Errorf("%s is %s, not a regular file", path, nr.Kind)
	case errors.As(err, &tl):
		return nil, fmt.Errorf("%s is %s", path, tl)
	}
	return b, err
}

// nearestDiff says how req differs from the recorded request nearest to
// it (the same model, the most fields alike): "; nearest recording differs
// in messages[1].content", or "" when nothing is recorded for its model,
// or the nearest is the same request asked more often than recorded.
func (c *Cassette) nearestDiff(req Request) string {
	var best []string
	found := false
	for _, e := range c.exchanges {
		if e.Request.Model != req.Model {
			continue
		}
		d := requestDiff(e.Request, req)
		if !found || len(d) < len(best) {
			best, found = d, true
		}
	}
	switch {
	case !found:
		return ""
	case len(best) == 0:
		return "; it was asked more often than the cassette recorded"
	}
	if len(best) > 3 {
		best = append(best[:3], "...")
	}
	return "; the nearest recording differs in " + strings.Join(best, ", ")
}

// requestDiff lists the fields in which two requests differ, as paths.
func requestDiff(a, b Request) []string {
	var d []string
	field := func(name string, x, y any) {
		if !jsonSame(x, y) {
			d = append(d, name)
		}
	}
	field("provider", a.Provider, b.Provider)
	if len(a.Messages) != len(b.Messages) {
		d = append(d, fmt.Sprintf("the number of messages (%d recorded, %d asked)", len(a.Messages), len(b.Messages)))
	}
	for i := 0; i < min(len(a.Messages), len(b.Messages)); i++ {
		ma, mb := a.Messages[i], b.Messages[i]
		field(fmt.Sprintf("messages[%d].role", i), ma.Role, mb.Role)
		field(fmt.Sprintf("messages[%d].content", i), ma.Content, mb.Content)
		field(fmt.Sprintf("messages[%d].tool_calls", i), ma.ToolCalls, mb.ToolCalls)
		field(fmt.Sprintf("messages[%d].tool_call_id", i), ma.ToolCallID, mb.ToolCallID)
	}
	field("schema", a.Schema, b.Schema)
	field("schema_name", a.SchemaName, b.SchemaName)
	field("temperature", a.Temperature, b.Temperature)
	field("max_tokens", a.MaxTokens, b.MaxTokens)
	field("reasoning_effort", a.ReasoningEffort, b.ReasoningEffort)
	field("reasoning", a.Reasoning, b.Reasoning)
	field("tools", a.Tools, b.Tools)
	field("partial", a.Partial, b.Partial)
	return d
}

// jsonSame reports whether x and y encode to the same canonical JSON.
func jsonSame(x, y any) bool {
	canon := func(v any) string {
		b, _ := json.Marshal(v)
		var g any
		if json.Unmarshal(b, &g) == nil {
			b, _ = json.Marshal(g)
		}
		return string(b)
	}
	return canon(x) == canon(y)
}

func (c *Cassette) add(e Exchange) {
	k := matchKey(e.Request)
	c.byKey[k] = append(c.byKey[k], len(c.exchanges))
	c.exchanges = append(c.exchanges, e)
}

// matchKey is the canonical JSON of what a request is matched on.
func matchKey(r Request) string {
	r.Endpoint = Endpoint{}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Sprintf("%#v", r)
	}
	// Round-trip so that a schema decoded from the file and one built in
	// memory encode alike (map keys sorted, numbers as JSON numbers).
	var v any
	if json.Unmarshal(b, &v) == nil {
		b, _ = json.Marshal(v)
	}
	return string(b)
}

// Complete answers req from the cassette, or records it. The offline stub
// model ([ProviderStub]) answers its own requests, recorded or not.
func (c *Cassette) Complete(ctx context.Context, req Request) (*Reply, error) {
	return c.complete(ctx, "", req)
}

func (c *Cassette) complete(ctx context.Context, run string, req Request) (*Reply, error) {
	if req.Provider == ProviderStub {
		rep, err := completeStub(ctx, req)
		streamWhole(req, rep)
		return rep, err
	}
	k := matchKey(req)
	c.mu.Lock()
	used := c.counts(run)
	n := used[k]
	if idx := c.byKey[k]; n < len(idx) {
		used[k] = n + 1
		e := c.exchanges[idx[n]]
		c.mu.Unlock()
		rep, err := parseReply(req, e.Response)
		if rep != nil {
			rep.Attempts = e.Attempts
		}
		if err == nil {
			streamWhole(req, rep)
		}
		return rep, err
	}
	c.mu.Unlock()
	if c.ReplayOnly || c.Inner == nil {
		c.mu.Lock()
		why := c.nearestDiff(req)
		c.mu.Unlock()
		return nil, &Error{Code: CodeReplay, Msg: fmt.Sprintf("model %q: the cassette %s has no recorded answer for this request (%d message%s, last: %s)%s", req.Model, c.Path, len(req.Messages), plural(len(req.Messages)), lastMessage(req), why)}
	}
	rep, err := c.Inner.Complete(ctx, req)
	fk := run + "\x00" + k
	if err != nil {
		c.mu.Lock()
		if c.failed == nil {
			c.failed = map[string]int{}
		}
		c.failed[fk]++
		c.mu.Unlock()
		return nil, err
	}
	rec := req
	rec.Endpoint, rec.Stream = Endpoint{}, nil
	c.mu.Lock()
	defer c.mu.Unlock()
	attempts := 0
	if f := c.failed[fk]; f > 0 {
		attempts = f + 1
		delete(c.failed, fk)
	}
	c.add(Exchange{Request: rec, Response: append(json.RawMessage(nil), rep.Raw...), Attempts: attempts})
	c.counts(run)[k]++
	if err := c.save(); err != nil {
		return nil, &Error{Code: CodeModel, Msg: err.Error()}
	}
	return rep, nil
}

// Prune drops the exchanges this run neither answered from nor recorded,
// rewriting the file when it drops any, and returns how many it dropped.
// Called once a run that used every part of its flow has ended, it leaves
// the tape with exactly what the flow asks now (a re-recorded prompt's old
// answers gone). A replay-only cassette is never rewritten.
func (c *Cassette) Prune() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ReplayOnly {
		return 0, nil
	}
	keep := make([]bool, len(c.exchanges))
	for k, idx := range c.byKey {
		for _, i := range idx[:min(c.used[k], len(idx))] {
			keep[i] = true
		}
	}
	old := c.exchanges
	c.exchanges, c.byKey = nil, map[string][]int{}
	dropped := 0
	for i, e := range old {
		if keep[i] {
			c.add(e)
		} else {
			dropped++
		}
	}
	if dropped == 0 {
		return 0, nil
	}
	return dropped, c.save()
}

// save writes the cassette atomically.
func (c *Cassette) save() error {
	data, err := json.MarshalIndent(cassetteFile{Version: cassetteVersion, Exchanges: c.exchanges}, "", "  ")
	if err != nil {
		return fmt.Errorf("cassette: %v", err)
	}
	if c.Mask != nil {
		if data = c.Mask(data); !json.Valid(data) {
			return fmt.Errorf("cassette: %s not written: masking a secret in it would break its JSON", c.Path)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.Path), ".cassette-*")
	if err != nil {
		return fmt.Errorf("cassette: %v", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	if werr == nil {
		werr = tmp.Chmod(0o644)
	}
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), c.Path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cassette: %v", werr)
	}
	return nil
}

func lastMessage(r Request) string {
	if len(r.Messages) == 0 {
		return "none"
	}
	return fmt.Sprintf("%q", clip(r.Messages[len(r.Messages)-1].Content, 80))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
