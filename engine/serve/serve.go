// Package serve is the HTTP side of skein serve: a JSON API over a run
// store (list, show and follow runs; start, cancel, resume, approve and
// reject them; list and show flows under given roots) and the web UI's
// embedded assets (ui/, served at /). Every action goes through the run
// service (engine/runs), so a run started or decided here is the run the
// command line sees. docs/serve.md is its contract.
//
// It knows no flags and no terminal: cmd/skein's serve command parses
// flags, opens the store, listens, and hands a [Config] to [New].
//
// The web UI's files live in ui/ beside this file and are embedded as
// they are: index.html is served for / and for any other path outside
// /api/ that names no file (so the UI may route by path); every other
// file at its own name. Pages load no script inline (the Content
// Security Policy allows scripts and styles from the server only, and
// inline style attributes).
package serve

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/trigger"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/store"
)

//go:embed ui
var uiFiles embed.FS

// Config is what a [Server] serves, and how.
type Config struct {
	// Store is the run store; the server does not close it.
	Store *store.Store
	// Roots are the flow roots: the directories whose flows are listed
	// and can be started. No path given to the API leaves them.
	Roots []string
	// Token, when set, is needed by every API request: as a bearer token,
	// or through the session cookie POST /api/login gives for it.
	Token string
	// By is who the decisions made through the server are recorded as.
	By string
	// Loopback says the server listens on a loopback address only: it
	// then answers only requests whose Host is a loopback name or
	// address (no DNS rebinding).
	Loopback bool
	// Load is how flows are loaded (Root and MaxSteps are set for each).
	Load frontend.Options
	// OpenCassette opens the cassette a run recorded its model calls in,
	// for its resume (nil: such a run is not resumed here).
	OpenCassette func(path string, replayOnly bool) (model.Provider, error)
	// Logf, when set, is told what goes wrong that no response says
	// (a run that could not record its end).
	Logf func(format string, args ...any)
	// MaxRuns bounds the queued runs running at once (0: no bound; see
	// [Server.Schedule]); Keep, when set, is how long ended runs and
	// queue items are kept.
	MaxRuns int
	Keep    time.Duration
}

// Server is the API and the UI over one store. Its zero value is not
// usable: make one with [New].
type Server struct {
	cfg   Config
	svc   *runs.Service
	roots []string // absolute
	key   []byte   // signs session cookies and CSRF tokens
	mux   *http.ServeMux
	ui    fs.FS

	// ctx ends when the server shuts down: the event streams close, and
	// the runs it started are let go.
	ctx  context.Context
	stop context.CancelFunc

	mu       sync.Mutex
	active   map[string]*active // runs this process runs, by id
	resuming map[string]bool    // parked runs being resumed, by id
	wg       sync.WaitGroup     // their goroutines

	graphs  graphCache
	flows   flowCache
	limit   *limiter           // wrong tokens, by address (limit.go)
	sched   *trigger.Scheduler // triggers.go
	metrics *metrics           // metrics.go
	hooks   hookFlows          // triggers.go
}

// active is a run the server's process runs.
type active struct {
	run  *runs.Run
	done chan struct{}
	// wake is closed and replaced when the run records something: event
	// streams following it look at the store at once rather than at
	// their next poll.
	wake chan struct{}
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("serve: no store")
	}
	s := &Server{cfg: cfg, active: map[string]*active{}, resuming: map[string]bool{}, limit: newLimiter()}
	for _, r := range cfg.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, err
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		s.roots = append(s.roots, abs)
	}
	s.svc = &runs.Service{Store: cfg.Store, Load: cfg.Load}
	s.key = newKey()
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		return nil, err
	}
	s.ui = sub
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.graphs.init()
	s.flows.init()
	s.sched = s.newScheduler()
	s.metrics = s.newMetrics()
	s.routes()
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.guard(s.mux) }

// HTTPServer returns an http.Server for the handler, with timeouts: a
// request's headers must come in 10 seconds, a response other than an
// event stream be written in 60, and an idle connection closes after 2
// minutes.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      0, // per response: see guard (event streams last)
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
}

// Close ends the event streams and lets go of the runs the server
// started: they go on until the process exits (a process that exits
// leaves them interrupted, for a resume to continue), or until
// [Server.CancelRuns].
func (s *Server) Close() { s.stop() }

// CancelRuns cancels the runs the server's process runs and waits for
// them to record their end.
func (s *Server) CancelRuns() {
	s.mu.Lock()
	for _, a := range s.active {
		a.run.Cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Wait waits for the runs the server's process runs to end.
func (s *Server) Wait() { s.wg.Wait() }

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	m.HandleFunc("GET /api/session", s.getSession)
	m.HandleFunc("POST /api/login", s.postLogin)
	m.HandleFunc("GET /api/runs", s.listRuns)
	m.HandleFunc("POST /api/runs", s.startRun)
	m.HandleFunc("GET /api/runs/{id}", s.getRun)
	m.HandleFunc("GET /api/runs/{id}/events", s.runEvents)
	m.HandleFunc("POST /api/runs/{id}/cancel", s.cancelRun)
	m.HandleFunc("POST /api/runs/{id}/resume", s.resumeRun)
	m.HandleFunc("POST /api/runs/{id}/approve", func(w http.ResponseWriter, r *http.Request) { s.decide(w, r, true) })
	m.HandleFunc("POST /api/runs/{id}/reject", func(w http.ResponseWriter, r *http.Request) { s.decide(w, r, false) })
	m.HandleFunc("GET /api/approvals", s.listApprovals)
	m.HandleFunc("GET /api/flows", s.listFlows)
	m.HandleFunc("GET /api/flows/{path...}", s.getFlow)
	s.triggerRoutes(m)
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "not_found", "no such API: "+r.Method+" "+r.URL.Path+" (docs/serve.md lists them)")
	})
	m.HandleFunc("/", s.static)
	s.mux = m
}

// static serves the UI's files: index.html for a path that names none.
func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name == "" || name == "." {
		name = "index.html"
	}
	if fi, err := fs.Stat(s.ui, name); err != nil || fi.IsDir() {
		name = "index.html"
	}
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, s.ui, name)
}

// Running returns the ids of the runs the server's process runs.
func (s *Server) Running() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.active))
	for id := range s.active {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
