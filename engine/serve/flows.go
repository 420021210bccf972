package serve

// This file is the flows API: the flows under the flow roots, one flow's
// graph, inputs and diagnostics, and keeping every path inside a root.

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/lang/frontend"
)

// flowPath turns a flow's path as the API names it (relative to a root,
// with /) into the file and its root, or answers 404: a path with ..,
// an absolute one, one that is not a .star file, or one that leaves its
// root through a symbolic link.
func (s *Server) flowPath(w http.ResponseWriter, p string) (file, root string, ok bool) {
	notFound := func() (string, string, bool) {
		fail(w, http.StatusNotFound, "not_found", "no flow "+p+" under the flow roots")
		return "", "", false
	}
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) || !strings.HasSuffix(p, ".star") {
		return notFound()
	}
	if !fs.ValidPath(p) {
		return notFound() // .., ., empty elements
	}
	for _, root := range s.roots {
		file := filepath.Join(root, filepath.FromSlash(p))
		if confine.Check(root, file) != nil {
			continue
		}
		if fi, err := os.Stat(file); err == nil && fi.Mode().IsRegular() {
			return file, root, true
		}
	}
	return notFound()
}

// flowJSON is a flow as the list has it.
type flowJSON struct {
	Path        string `json:"path"`
	Root        string `json:"root"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Errors      int    `json:"errors"`
	Warnings    int    `json:"warnings"`
}

// flowCache keeps what loading each flow file found, by its path and
// modification time: the list loads only the files changed since.
type flowCache struct {
	mu sync.Mutex
	m  map[string]cachedFlow
}

type cachedFlow struct {
	mod  time.Time
	size int64
	f    *frontend.Flow
}

func (c *flowCache) init() { c.m = map[string]cachedFlow{} }

// load loads file under root, or returns what an earlier load of it
// found when neither it nor a file that load read (a module it loads)
// has changed since.
func (s *Server) load(file, root string, fi fs.FileInfo) *frontend.Flow {
	c := &s.flows
	c.mu.Lock()
	cf, ok := c.m[file]
	c.mu.Unlock()
	if ok && cf.mod.Equal(fi.ModTime()) && cf.size == fi.Size() && sourcesUnchanged(cf.f, file) {
		return cf.f
	}
	lo := s.cfg.Load
	lo.Root = root
	f := frontend.Load(file, lo)
	c.mu.Lock()
	if len(c.m) >= 4096 {
		clear(c.m)
	}
	c.m[file] = cachedFlow{mod: fi.ModTime(), size: fi.Size(), f: f}
	c.mu.Unlock()
	return f
}

// sourcesUnchanged reports whether every file f's load read, other than
// its own file, still holds what the load read.
func sourcesUnchanged(f *frontend.Flow, file string) bool {
	own := confine.Abs(file)
	for _, src := range f.Sources.List() {
		if src.Path == own {
			continue
		}
		if b, err := lang.ReadFile(src.Path); err != nil || !bytes.Equal(b, src.Text) {
			return false
		}
	}
	return true
}

// maxFlows bounds how many files the flow list looks at.
const maxFlows = 2000

// eachFlow calls fn with each flow file under the roots (a .star file not
// a test, outside hidden, testdata and node_modules folders), loaded
// through the cache, with the root it is under; at most maxFlows files.
func (s *Server) eachFlow(fn func(p, root string, f *frontend.Flow)) {
	n := 0
	for _, root := range s.roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			name := d.Name()
			if d.IsDir() {
				if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".star") || strings.HasSuffix(name, "_test.star") || !d.Type().IsRegular() {
				return nil
			}
			if n++; n > maxFlows {
				return filepath.SkipAll
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			fn(p, root, s.load(p, root, fi))
			return nil
		})
	}
}

// listFlows is GET /api/flows.
func (s *Server) listFlows(w http.ResponseWriter, r *http.Request) {
	out := []flowJSON{}
	s.eachFlow(func(p, root string, f *frontend.Flow) {
		if !definesFlow(f) {
			return
		}
		rel, _ := filepath.Rel(root, p)
		j := flowJSON{Path: filepath.ToSlash(rel), Root: root}
		if f.Graph != nil {
			j.Name, j.Description = f.Graph.Name, f.Graph.Description
		}
		j.Errors, j.Warnings = check.Count(f.Diagnostics)
		out = append(out, j)
	})
	slices.SortFunc(out, func(a, b flowJSON) int { return strings.Compare(a.Path, b.Path) })
	writeJSON(w, http.StatusOK, map[string]any{"flows": out})
}

// definesFlow reports whether a load found a flow: a graph with steps, or
// errors in a file that is not a module of helpers (it failed before its
// steps were built: it is shown, with its errors).
func definesFlow(f *frontend.Flow) bool {
	if f.Graph != nil {
		return len(f.Graph.Steps()) > 0
	}
	return f.Errors() > 0
}

// inputJSON is a flow's input.
type inputJSON struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Default  any    `json:"default"`
	Help     string `json:"help"`
	Choices  []any  `json:"choices"`
}

// getFlow is GET /api/flows/{path}.
func (s *Server) getFlow(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("path")
	file, root, ok := s.flowPath(w, p)
	if !ok {
		return
	}
	fi, err := os.Stat(file)
	if err != nil {
		fail(w, http.StatusNotFound, "not_found", "no flow "+p+" under the flow roots")
		return
	}
	f := s.load(file, root, fi)
	out := struct {
		Path        string          `json:"path"`
		Root        string          `json:"root"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Inputs      []inputJSON     `json:"inputs"`
		Diagnostics json.RawMessage `json:"diagnostics"`
		Errors      int             `json:"errors"`
		Warnings    int             `json:"warnings"`
		Graph       json.RawMessage `json:"graph"`
	}{Path: path.Clean(p), Root: root, Inputs: []inputJSON{}, Diagnostics: diagnostics(f.Diagnostics), Graph: graphJSON(f.Graph, nil)}
	out.Errors, out.Warnings = check.Count(f.Diagnostics)
	if g := f.Graph; g != nil {
		out.Name, out.Description = g.Name, g.Description
		out.Inputs = inputs(g)
	}
	writeJSON(w, http.StatusOK, out)
}

// inputs are g's declared inputs, in declaration order, with defaults and
// choices as JSON (the header of skein graph --format json has them).
func inputs(g *graphir.Graph) []inputJSON {
	var header struct {
		Inputs map[string]struct {
			Default json.RawMessage `json:"default"`
			Choices []any           `json:"choices"`
		} `json:"inputs"`
	}
	if b, err := json.Marshal(g); err == nil {
		json.Unmarshal(b, &header)
	}
	out := []inputJSON{}
	for _, in := range g.Inputs {
		j := inputJSON{Name: in.Name, Type: in.TypeName(), Required: in.Required, Help: in.Help, Choices: []any{}}
		if h, ok := header.Inputs[in.Name]; ok {
			if len(h.Default) > 0 {
				j.Default = h.Default
			}
			if h.Choices != nil {
				j.Choices = h.Choices
			}
		}
		out = append(out, j)
	}
	return out
}

// diagnostics is ds as check --json writes them: a list.
func diagnostics(ds []check.Diagnostic) json.RawMessage {
	var b bytes.Buffer
	check.WriteJSON(&b, ds)
	var report struct {
		Diagnostics json.RawMessage `json:"diagnostics"`
	}
	if json.Unmarshal(b.Bytes(), &report) != nil || report.Diagnostics == nil {
		return json.RawMessage("[]")
	}
	return report.Diagnostics
}
