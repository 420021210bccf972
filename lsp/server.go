// Package lsp is Skein's Language Server Protocol server: diagnostics from
// the checker as the user types, hover, go to definition, completion,
// document symbols and formatting, over JSON-RPC 2.0 on a pair of streams.
//
// It loads and checks flows through the one front end (lang/frontend),
// reading open buffers before the disk, formats them with lang, and knows
// nothing of terminals or flags.
package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/lang/frontend"
)

// DefaultDebounce is how long the server waits after a change before it
// checks the buffer again.
const DefaultDebounce = 200 * time.Millisecond

// ErrNoShutdown is what [Server.Serve] returns when the client sent exit
// without shutdown first (the protocol asks for exit status 1 then).
var ErrNoShutdown = errors.New("exit without shutdown")

// Server is one language server session.
type Server struct {
	// Debounce is how long to wait after a change before checking; zero
	// means DefaultDebounce.
	Debounce time.Duration
	// Log receives what the server has to say that is not a reply (bad
	// frames, failures); nil discards it.
	Log io.Writer

	w *writer

	mu        sync.Mutex
	docs      map[string]*document       // open buffers by cleaned path
	published map[string]map[string]bool // by flow path: the URIs its last check published to
	timer     *time.Timer                // a change's debounce, or nil
	running   *checking                  // the check under way, or nil
	wake      chan struct{}              // tells the checker there may be work (nil: none runs)
	shutdown  bool
}

// document is an open buffer.
type document struct {
	path    string
	uri     string
	version int
	text    *text
	// stale says the buffer, or a file its last check read, changed
	// since: it is checked again.
	stale bool
	an    *analysis // the last check of the buffer
	good  *analysis // the last check that produced a graph
}

// analysis is what one check of a buffer found.
type analysis struct {
	text    *text
	version int
	g       *graphir.Graph
	diags   []check.Diagnostic
	deps    map[string]bool     // the files its load read or tried to, by cleaned path
	env     *check.FlowEnvelope // computed on the first hover that shows it
}

// envelope returns the envelope of the analysed graph (docs/envelope.md),
// computing it on first use; the server's lock is held.
func (a *analysis) envelope() *check.FlowEnvelope {
	if a.env == nil && a.g != nil {
		a.env = check.ComputeEnvelope(a.g)
	}
	return a.env
}

// checking is the check under way, which a change to its buffer or to a
// file it read cancels: its result would be stale.
type checking struct {
	d      *document
	an     *analysis
	cancel context.CancelFunc
}

// Serve reads requests from in and writes replies and notifications to
// out until the client sends exit or in ends. It returns nil after
// shutdown and exit, [ErrNoShutdown] after an exit without shutdown, and an
// error when in ends part way through a frame.
func (s *Server) Serve(in io.Reader, out io.Writer) error {
	s.w = &writer{w: out}
	s.docs = map[string]*document{}
	s.published = map[string]map[string]bool{}
	s.wake = make(chan struct{}, 1)
	ctx, stop := context.WithCancel(context.Background())
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		s.checker(ctx)
	}()
	defer func() {
		stop() // cancels the check under way
		<-checked
		s.stopTimers()
	}()
	r := newReader(in)
	for {
		body, err := r.read()
		if err == io.EOF {
			return nil
		}
		if isFrameError(err) {
			s.logf("skipping a bad frame: %v", err)
			s.reply(nil, nil, &respError{codeParseError, "bad frame: " + err.Error()})
			continue
		}
		if err != nil {
			return fmt.Errorf("reading a frame: %w", err)
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			s.logf("a frame that is not JSON: %v", err)
			s.reply(nil, nil, &respError{codeParseError, "the message is not valid JSON: " + err.Error()})
			continue
		}
		if m.Method == "" {
			continue // a response to nothing we asked
		}
		if m.Method == "exit" {
			s.mu.Lock()
			down := s.shutdown
			s.mu.Unlock()
			if !down {
				return ErrNoShutdown
			}
			return nil
		}
		s.handle(&m)
	}
}

func (s *Server) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, "skein lsp: "+format+"\n", args...)
	}
}

func (s *Server) stopTimers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
}

// reply answers request id with result or e; a notification (nil id) gets
// an answer only for an error it could not be told apart from a request by.
func (s *Server) reply(id *json.RawMessage, result any, e *respError) {
	m := &message{ID: id, Error: e}
	if id == nil {
		null := json.RawMessage("null")
		m.ID = &null
	}
	if e == nil {
		b, err := json.Marshal(result)
		if err != nil {
			m.Error = &respError{codeInternalError, err.Error()}
		} else {
			m.Result = b
		}
	}
	if err := s.w.write(m); err != nil {
		s.logf("writing a reply: %v", err)
	}
}

func (s *Server) notify(method string, params any) {
	b, err := json.Marshal(params)
	if err != nil {
		s.logf("encoding %s: %v", method, err)
		return
	}
	if err := s.w.write(&message{Method: method, Params: b}); err != nil {
		s.logf("writing %s: %v", method, err)
	}
}

// handler answers one request; notifications have none of their own.
type handler func(s *Server, params json.RawMessage) (any, *respError)

var requests = map[string]handler{
	"initialize":                  (*Server).initialize,
	"shutdown":                    (*Server).shutdownReq,
	"textDocument/hover":          (*Server).hover,
	"textDocument/definition":     (*Server).definition,
	"textDocument/completion":     (*Server).completion,
	"textDocument/documentSymbol": (*Server).documentSymbols,
	"textDocument/formatting":     (*Server).formatting,
}

var notifications = map[string]func(s *Server, params json.RawMessage) error{
	"initialized":            func(*Server, json.RawMessage) error { return nil },
	"textDocument/didOpen":   (*Server).didOpen,
	"textDocument/didChange": (*Server).didChange,
	"textDocument/didSave":   (*Server).didSave,
	"textDocument/didClose":  (*Server).didClose,
}

func (s *Server) handle(m *message) {
	if m.ID == nil {
		if f, ok := notifications[m.Method]; ok {
			func() {
				defer s.recoverTo(m.Method)
				if err := f(s, m.Params); err != nil {
					s.logf("%s: %v", m.Method, err)
				}
			}()
		} else if !strings.HasPrefix(m.Method, "$/") {
			s.logf("ignoring the notification %s", m.Method)
		}
		return
	}
	h, ok := requests[m.Method]
	if !ok {
		s.reply(m.ID, nil, &respError{codeMethodNotFound, "method not found: " + m.Method})
		return
	}
	s.mu.Lock()
	down := s.shutdown
	s.mu.Unlock()
	if down && m.Method != "shutdown" {
		s.reply(m.ID, nil, &respError{codeInvalidRequest, "the server is shutting down"})
		return
	}
	result, e := s.call(h, m)
	s.reply(m.ID, result, e)
}

// call runs a handler, turning a panic into an internal error so that one
// bad request never ends the session.
func (s *Server) call(h handler, m *message) (result any, e *respError) {
	defer func() {
		if p := recover(); p != nil {
			s.logf("%s: internal error: %v", m.Method, p)
			result, e = nil, &respError{codeInternalError, fmt.Sprintf("internal error: %v", p)}
		}
	}()
	return h(s, m.Params)
}

// recoverTo logs a panic instead of ending the session. A handler that
// panics while holding s.mu has its deferred unlock run first.
func (s *Server) recoverTo(what string) {
	if p := recover(); p != nil {
		s.logf("%s: internal error: %v", what, p)
	}
}

func decode(params json.RawMessage, v any) *respError {
	if err := json.Unmarshal(params, v); err != nil {
		return &respError{codeInvalidParams, "invalid params: " + err.Error()}
	}
	return nil
}

func (s *Server) initialize(json.RawMessage) (any, *respError) {
	return map[string]any{
		"capabilities": map[string]any{
			"textDocumentSync": map[string]any{
				"openClose": true,
				"change":    1, // the whole buffer each time
				"save":      map[string]any{"includeText": true},
			},
			"hoverProvider":              true,
			"definitionProvider":         true,
			"completionProvider":         map[string]any{"triggerCharacters": []string{".", "/", "\""}},
			"documentSymbolProvider":     true,
			"documentFormattingProvider": true,
		},
		"serverInfo": map[string]any{"name": "skein"},
	}, nil
}

func (s *Server) shutdownReq(json.RawMessage) (any, *respError) {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	return nil, nil
}

func (s *Server) didOpen(params json.RawMessage) error {
	var p didOpenParams
	if err := json.Unmarshal(params, &p); err != nil {
		return err
	}
	path := pathOf(p.TextDocument.URI)
	if path == "" {
		return fmt.Errorf("not a file: URI: %s", p.TextDocument.URI)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := &document{path: filepath.Clean(path), uri: p.TextDocument.URI, version: p.TextDocument.Version, text: newText(p.TextDocument.Text), stale: true}
	s.docs[d.path] = d
	s.changed(d.path)
	s.checkNow()
	return nil
}

func (s *Server) didChange(params json.RawMessage) error {
	var p didChangeParams
	if err := json.Unmarshal(params, &p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[filepath.Clean(pathOf(p.TextDocument.URI))]
	if d == nil {
		return fmt.Errorf("change to a buffer that is not open: %s", p.TextDocument.URI)
	}
	for _, c := range p.ContentChanges {
		if c.Range != nil {
			// Incremental changes, though the server asked for whole buffers.
			t := d.text
			start := t.lineStart(c.Range.Start.Line) + t.offset(c.Range.Start)
			end := t.lineStart(c.Range.End.Line) + t.offset(c.Range.End)
			if start > len(t.src) || end > len(t.src) || start > end {
				return fmt.Errorf("change range out of the buffer")
			}
			d.text = newText(t.src[:start] + c.Text + t.src[end:])
		} else {
			d.text = newText(c.Text)
		}
	}
	d.version = p.TextDocument.Version
	s.changed(d.path)
	s.schedule()
	return nil
}

func (s *Server) didSave(params json.RawMessage) error {
	var p didSaveParams
	if err := json.Unmarshal(params, &p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Clean(pathOf(p.TextDocument.URI))
	if d := s.docs[path]; d != nil && p.Text != nil && *p.Text != d.text.src {
		d.text = newText(*p.Text)
	}
	s.changed(path) // the disk's copy, which unopened files see
	s.checkNow()
	return nil
}

func (s *Server) didClose(params json.RawMessage) error {
	var p didCloseParams
	if err := json.Unmarshal(params, &p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Clean(pathOf(p.TextDocument.URI))
	delete(s.docs, path)
	s.changed(path) // the flows that load it read the disk now
	// What the closed buffer published is cleared; the other open flows
	// that reach those files publish again what they see.
	for uri := range s.published[path] {
		s.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: uri, Diagnostics: []diagnostic{}})
		if p := pathOf(uri); p != "" {
			s.changed(filepath.Clean(p))
		}
	}
	delete(s.published, path)
	s.checkNow()
	return nil
}

// schedule has the stale buffers checked once no change has come for the
// debounce interval. It is called with s.mu held.
func (s *Server) schedule() {
	delay := s.Debounce
	if delay == 0 {
		delay = DefaultDebounce
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.timer == t {
			s.checkNow()
		}
	})
	s.timer = t
}

// checkNow has the stale buffers checked now, not after a debounce. It is
// called with s.mu held.
func (s *Server) checkNow() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	select {
	case s.wake <- struct{}{}:
	default: // the checker is told already, or none runs (tests)
	}
}

// changed notes that the file at path changed: the buffer of path and
// those whose last check read it are stale, and the check under way is
// cancelled if it is of path or read it (a newer version cancels the
// older check; every didOpen checked every buffer once, so with 200 open
// a hover took 1.7 s). It is called with s.mu held.
func (s *Server) changed(path string) {
	for _, d := range s.docs {
		if d.path == path || d.an != nil && d.an.deps[path] {
			d.stale = true
		}
	}
	if c := s.running; c != nil && (c.d.path == path || c.an.deps[path]) {
		c.cancel()
		c.d.stale = true
	}
}

// checker checks the stale buffers whenever it is told there may be
// some, until ctx is done. It runs on a goroutine of its own, so that
// requests are answered while a check runs: a flow's top-level code can
// take as long as its load budget.
func (s *Server) checker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.checkStale(ctx)
	}
}

// checkStale checks the stale buffers one at a time, in the order of
// their paths, until none is left or a change's debounce is pending.
func (s *Server) checkStale(ctx context.Context) {
	for s.checkNext(ctx) {
	}
}

// checkNext checks the first stale buffer and reports whether there was
// one. The load runs without s.mu held; its result is recorded and
// published only if nothing it read changed meanwhile (the change then
// cancelled it, and the buffer is stale again).
func (s *Server) checkNext(ctx context.Context) bool {
	s.mu.Lock()
	var d *document
	if s.timer == nil && ctx.Err() == nil {
		for _, doc := range s.docs {
			if doc.stale && (d == nil || doc.path < d.path) {
				d = doc
			}
		}
	}
	if d == nil {
		s.mu.Unlock()
		return false
	}
	cctx, cancel := context.WithCancel(ctx)
	c := &checking{d: d, cancel: cancel, an: &analysis{text: d.text, version: d.version, deps: map[string]bool{d.path: true}}}
	s.running, d.stale = c, false
	s.mu.Unlock()

	defer cancel()
	defer s.recoverTo("checking " + d.path)
	loaded := frontend.LoadSource(d.path, []byte(c.an.text.src), frontend.Options{Context: cctx, ReadFile: func(name string) ([]byte, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		c.an.deps[filepath.Clean(confine.Abs(name))] = true
		return s.readFile(name)
	}})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = nil
	if cctx.Err() != nil || s.docs[d.path] != d {
		return true // stale, or closed: what is checked next replaces it
	}
	c.an.g, c.an.diags = loaded.Graph, loaded.Diagnostics
	s.record(d, c.an)
	return true
}

// readFile reads a file for the loader: an open buffer's contents, else
// the disk. It is called with s.mu held.
func (s *Server) readFile(name string) ([]byte, error) {
	if d, ok := s.docs[filepath.Clean(confine.Abs(name))]; ok {
		return []byte(d.text.src), nil
	}
	return lang.ReadFile(name) // bounded, as the loader's own reads are
}

// record makes an, a finished check of d's buffer, d's last, and
// publishes its diagnostics to the files they are in, clearing the files
// that no longer have any. It is called with s.mu held.
func (s *Server) record(d *document, an *analysis) {
	g := an.g
	d.an = an
	if g != nil {
		d.good = an
	}

	byFile := map[string][]diagnostic{}
	texts := map[string]*text{d.path: an.text}
	for _, dg := range an.diags {
		file := dg.Pos.File
		line, col := dg.Pos.Line, dg.Pos.Col
		msg := dg.Message
		if file == "" || strings.HasPrefix(file, graphir.StdPrefix) {
			// Nowhere in a file the user has: put it at the top of the flow.
			if file != "" {
				msg = dg.Pos.String() + ": " + msg
			}
			file, line, col = d.path, 1, 1
		}
		file = filepath.Clean(confine.Abs(file))
		t, ok := texts[file]
		if !ok {
			b, err := s.readFile(file)
			if err != nil {
				b = nil
			}
			t = newText(string(b))
			texts[file] = t
		}
		byFile[file] = append(byFile[file], toDiagnostic(t, dg, line, col, msg))
	}
	uris := map[string]bool{}
	publish := func(file string, ds []diagnostic) {
		uri := uriOf(file)
		if file == d.path {
			uri = d.uri
		}
		uris[uri] = true
		p := publishDiagnosticsParams{URI: uri, Diagnostics: ds}
		if file == d.path {
			v := an.version
			p.Version = &v
		}
		if p.Diagnostics == nil {
			p.Diagnostics = []diagnostic{}
		}
		s.notify("textDocument/publishDiagnostics", p)
	}
	publish(d.path, byFile[d.path])
	files := []string{}
	for f := range byFile {
		if f != d.path {
			files = append(files, f)
		}
	}
	if g != nil {
		for _, f := range g.Files {
			f = filepath.Clean(confine.Abs(f))
			if _, ok := byFile[f]; !ok && f != d.path && !strings.HasPrefix(f, graphir.StdPrefix) {
				files = append(files, f)
			}
		}
	}
	sort.Strings(files)
	for _, f := range files {
		if uris[uriOf(f)] {
			continue
		}
		publish(f, byFile[f])
	}
	// Files this flow published to before and no longer reads or reports on.
	for uri := range s.published[d.path] {
		if !uris[uri] {
			s.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: uri, Diagnostics: []diagnostic{}})
		}
	}
	s.published[d.path] = uris
}

// toDiagnostic converts a checker diagnostic at line:col of t.
func toDiagnostic(t *text, dg check.Diagnostic, line, col int, msg string) diagnostic {
	if dg.Hint != "" {
		msg += " (" + dg.Hint + ")"
	}
	sev := 1
	if dg.Severity == check.Warning {
		sev = 2
	}
	return diagnostic{Range: wordRange(t, line, col), Severity: sev, Code: string(dg.Code), Source: "skein", Message: msg}
}

// wordRange is the range of the word or string that starts at line:col of
// t, else of the one character there.
func wordRange(t *text, line, col int) lspRange {
	if line < 1 {
		line, col = 1, 1
	}
	if col < 1 {
		col = 1
	}
	start := t.toLSP(line, col)
	l := t.line(start.Line)
	off := t.offset(start)
	endOff := off
	if _, ws, we := wordAt(l, off); ws == off && we > off {
		endOff = we
	} else if off < len(l) && (l[off] == '"' || l[off] == '\'') {
		if _, _, se, ok := stringAt(l, off+1); ok {
			endOff = min(se+1, len(l))
		}
	}
	if endOff == off {
		endOff = off + 1
	}
	return lspRange{start, t.lspAt(start.Line, endOff)}
}
