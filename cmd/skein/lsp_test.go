package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// lspClient drives `skein lsp` as a subprocess over pipes.
type lspClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	msgs   chan map[string]any
	stderr *bytes.Buffer
	nextID int
	queue  []map[string]any // notifications read while waiting for a reply
	mu     sync.Mutex
}

func startLSP(t *testing.T) *lspClient {
	t.Helper()
	exe, err := exec.LookPath("skein") // the test binary, put in $PATH by TestMain
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "lsp")
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &lspClient{t: t, cmd: cmd, in: in, msgs: make(chan map[string]any, 100), stderr: &bytes.Buffer{}}
	cmd.Stderr = &lockedWriter{w: c.stderr, mu: &c.mu}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	go c.readLoop(bufio.NewReader(out))
	return c
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (c *lspClient) readLoop(r *bufio.Reader) {
	defer close(c.msgs)
	for {
		length := -1
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				length, _ = strconv.Atoi(v)
			}
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			panic(fmt.Sprintf("server sent bad JSON %q: %v", body, err))
		}
		c.msgs <- m
	}
}

func (c *lspClient) writeRaw(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, s); err != nil {
		c.t.Fatalf("writing to the server: %v", err)
	}
}

func (c *lspClient) send(m map[string]any) {
	c.t.Helper()
	m["jsonrpc"] = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.writeRaw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(b), b))
}

func (c *lspClient) notify(method string, params any) {
	c.t.Helper()
	c.send(map[string]any{"method": method, "params": params})
}

// next returns the next message from the server; it fails the test if the
// server goes away or says nothing for a long while (a hang guard, not a
// timing assertion).
func (c *lspClient) next() map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.t.Fatalf("the server closed its output; stderr:\n%s", c.stderr)
		}
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatalf("no message from the server")
	}
	return nil
}

// request sends a request and returns its reply, queueing the
// notifications that arrive before it.
func (c *lspClient) request(method string, params any) map[string]any {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"id": id, "method": method, "params": params})
	for {
		m := c.next()
		if _, isReply := m["method"]; !isReply && m["id"] == float64(id) {
			return m
		}
		c.queue = append(c.queue, m)
	}
}

// diagnostics returns the next diagnostics published for uri.
func (c *lspClient) diagnostics(uri string) []any {
	c.t.Helper()
	for {
		var m map[string]any
		if len(c.queue) > 0 {
			m, c.queue = c.queue[0], c.queue[1:]
		} else {
			m = c.next()
		}
		if m["method"] != "textDocument/publishDiagnostics" {
			continue
		}
		p := m["params"].(map[string]any)
		if p["uri"] == uri {
			return p["diagnostics"].([]any)
		}
	}
}

func fileURI(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }

func pos(line, char int) map[string]any { return map[string]any{"line": line, "character": char} }

func docPos(uri string, line, char int) map[string]any {
	return map[string]any{"textDocument": map[string]any{"uri": uri}, "position": pos(line, char)}
}

// utf16Col is the LSP character of the first occurrence of sub in line.
func utf16Col(t *testing.T, line, sub string) int {
	i := strings.Index(line, sub)
	if i < 0 {
		t.Fatalf("%q not in %q", sub, line)
	}
	return len(utf16.Encode([]rune(line[:i])))
}

const lspLib = `def check_step(name):
    return step(name, run = ["true"])
`

const lspFlow = `load("lib.star", "check_step")

flow(name = "demo", inputs = {"target": "app"})

build = step("build", run = ["make", "{{ inputs.target }}"])
test = check_step("test")
publish = step("publish", run = ["echo", "é✓𝄞 {{ biuld.stdout }}"])
chain(START, build, test, publish, END)
`

// TestLSP drives skein lsp through a session an editor would have.
func TestLSP(t *testing.T) {
	dir := t.TempDir()
	flowPath := filepath.Join(dir, "flow.star")
	libPath := filepath.Join(dir, "lib.star")
	if err := os.WriteFile(libPath, []byte(lspLib), 0o644); err != nil {
		t.Fatal(err)
	}
	// The file on disk differs from the buffer: the buffer is what is checked.
	if err := os.WriteFile(flowPath, []byte("this is not the buffer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	uri, libURI := fileURI(flowPath), fileURI(libPath)
	c := startLSP(t)

	init := c.request("initialize", map[string]any{"processId": nil, "rootUri": fileURI(dir), "capabilities": map[string]any{}})
	caps := init["result"].(map[string]any)["capabilities"].(map[string]any)
	for _, k := range []string{"hoverProvider", "definitionProvider", "completionProvider", "documentSymbolProvider", "documentFormattingProvider"} {
		if caps[k] == nil {
			t.Errorf("initialize: no %s in %v", k, caps)
		}
	}
	c.notify("initialized", map[string]any{})

	// Open a flow with a typo: one diagnostic, at the typo, on a line with
	// characters outside the BMP before it.
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "skein", "version": 1, "text": lspFlow}})
	ds := c.diagnostics(uri)
	if len(ds) != 1 {
		t.Fatalf("want 1 diagnostic, got %v", ds)
	}
	d := ds[0].(map[string]any)
	line := strings.Split(lspFlow, "\n")[6]
	col := utf16Col(t, line, "biuld")
	wantRange := map[string]any{"start": pos(6, col), "end": pos(6, col+5)}
	if fmt.Sprint(d["range"]) != fmt.Sprint(wantRange) || d["code"] != "unknown_name" || d["severity"] != 1.0 ||
		!strings.Contains(d["message"].(string), `did you mean "build"?`) {
		t.Errorf("diagnostic %v, want unknown_name at %v", d, wantRange)
	}
	if ds := c.diagnostics(libURI); len(ds) != 0 {
		t.Errorf("lib.star: want no diagnostics, got %v", ds)
	}

	// Fix it (the change is checked after the debounce): an empty list.
	fixed := strings.Replace(lspFlow, "biuld", "build", 1)
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{map[string]any{"text": fixed}}})
	if ds := c.diagnostics(uri); len(ds) != 0 {
		t.Errorf("after the fix: want no diagnostics, got %v", ds)
	}
	fixedLines := strings.Split(fixed, "\n")

	// Hover over the step name in the template: kind, bound, join, reads.
	h := c.request("textDocument/hover", docPos(uri, 6, utf16Col(t, fixedLines[6], "build.stdout")+2))
	hv := fmt.Sprint(h["result"])
	for _, want := range []string{"task", "`build`", "flow.star:5:9", "max_visits: unbounded", "join: and", "reads: inputs.target"} {
		if !strings.Contains(hv, want) {
			t.Errorf("hover on build: %q lacks %q", hv, want)
		}
	}
	// Hover over a builtin and a keyword argument: the doc table.
	h = c.request("textDocument/hover", docPos(uri, 4, 10))
	if hv := fmt.Sprint(h["result"]); !strings.Contains(hv, "step(name, *, run=None") {
		t.Errorf("hover on step: %q", hv)
	}
	h = c.request("textDocument/hover", docPos(uri, 4, utf16Col(t, fixedLines[4], "run =")+1))
	if hv := fmt.Sprint(h["result"]); !strings.Contains(hv, "**run** of `step(") || !strings.Contains(hv, "no shell") {
		t.Errorf("hover on run=: %q", hv)
	}

	// Definition: the step name in the template goes to its step() call.
	def := c.request("textDocument/definition", docPos(uri, 6, utf16Col(t, fixedLines[6], "build.stdout")+1))
	if got := fmt.Sprint(def["result"]); got != fmt.Sprint([]any{map[string]any{"uri": uri, "range": map[string]any{"start": pos(4, 8), "end": pos(4, 12)}}}) {
		t.Errorf("definition of build: %s", got)
	}
	// Across the load(): the module path to the file, the loaded name to
	// its def in lib.star.
	def = c.request("textDocument/definition", docPos(uri, 0, 8))
	if got := fmt.Sprint(def["result"]); !strings.Contains(got, "uri:"+libURI) {
		t.Errorf("definition of the load path: %s", got)
	}
	def = c.request("textDocument/definition", docPos(uri, 5, utf16Col(t, fixedLines[5], "check_step")+2))
	if got := fmt.Sprint(def["result"]); got != fmt.Sprint([]any{map[string]any{"uri": libURI, "range": map[string]any{"start": pos(0, 4), "end": pos(0, 14)}}}) {
		t.Errorf("definition of check_step: %s", got)
	}
	// An input name goes to its declaration in flow().
	def = c.request("textDocument/definition", docPos(uri, 4, utf16Col(t, fixedLines[4], "target }}")+1))
	if got := fmt.Sprint(def["result"]); !strings.Contains(got, fmt.Sprint(map[string]any{"start": pos(2, 30), "end": pos(2, 38)})) {
		t.Errorf("definition of inputs.target: %s", got)
	}

	// Completion after "build." and "inputs." while typing (the buffer
	// does not load, so the last good graph serves).
	typing := fixed + `x = step("x", run = ["echo", "{{ build. }}", "{{ inputs. }}"])` + "\n"
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 3},
		"contentChanges": []any{map[string]any{"text": typing}}})
	last := strings.Split(typing, "\n")[8]
	labels := func(res map[string]any) []string {
		var out []string
		for _, it := range res["result"].(map[string]any)["items"].([]any) {
			out = append(out, it.(map[string]any)["label"].(string))
		}
		return out
	}
	got := labels(c.request("textDocument/completion", docPos(uri, 8, utf16Col(t, last, "build.")+6)))
	if strings.Join(got, ",") != "stdout,text,stderr,exit_code,error,code" {
		t.Errorf("completion after build.: %v", got)
	}
	got = labels(c.request("textDocument/completion", docPos(uri, 8, utf16Col(t, last, "inputs.")+7)))
	if strings.Join(got, ",") != "target" {
		t.Errorf("completion after inputs.: %v", got)
	}
	// Keyword arguments inside step( ... ).
	got = labels(c.request("textDocument/completion", docPos(uri, 8, utf16Col(t, last, "run ="))))
	if !strings.Contains(","+strings.Join(got, ",")+",", ",max_visits,") {
		t.Errorf("completion in step(): %v", got)
	}

	// Document symbols: the steps of this file.
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 4},
		"contentChanges": []any{map[string]any{"text": fixed}}})
	syms := c.request("textDocument/documentSymbol", map[string]any{"textDocument": map[string]any{"uri": uri}})
	var names []string
	for _, s := range syms["result"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "build,test,publish" {
		t.Errorf("symbols: %v", names)
	}

	// Formatting: one edit with what skein fmt prints.
	messy := strings.Replace(fixed, `build = step("build", run = ["make", "{{ inputs.target }}"])`, `build=step('build',run=["make","{{ inputs.target }}"])`, 1)
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 5},
		"contentChanges": []any{map[string]any{"text": messy}}})
	edits := c.request("textDocument/formatting", map[string]any{"textDocument": map[string]any{"uri": uri}, "options": map[string]any{"tabSize": 4, "insertSpaces": true}})
	es, _ := edits["result"].([]any)
	if len(es) != 1 || es[0].(map[string]any)["newText"] != fixed {
		t.Errorf("formatting: %v", edits)
	}

	// A malformed frame, a frame that is not JSON and an unknown method do
	// not end the session.
	c.writeRaw("Content-Length: nope\r\n\r\n")
	c.writeRaw("Content-Length: 9\r\n\r\n{not json")
	if m := c.next(); m["error"].(map[string]any)["code"] != -32700.0 {
		t.Errorf("bad JSON: want a parse error, got %v", m)
	}
	unknown := c.request("textDocument/unheardOf", map[string]any{})
	if unknown["error"].(map[string]any)["code"] != -32601.0 {
		t.Errorf("unknown method: %v", unknown)
	}
	c.notify("$/cancelRequest", map[string]any{"id": 1})
	if h := c.request("textDocument/hover", docPos(uri, 4, 10)); h["result"] == nil {
		t.Errorf("the server no longer answers: %v", h)
	}

	// shutdown, then exit: status 0.
	if r := c.request("shutdown", nil); r["error"] != nil {
		t.Errorf("shutdown: %v", r)
	}
	c.notify("exit", nil)
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("skein lsp exit: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !strings.Contains(c.stderr.String(), "bad Content-Length") {
		t.Errorf("stderr does not log the bad frame:\n%s", c.stderr)
	}
}
