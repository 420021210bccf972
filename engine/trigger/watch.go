package trigger

// This file is the watch triggers: trigger(watch = "inbox") fires when
// the file or directory changes, once the changes have settled for its
// debounce.

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/vm/store"
)

// watch is one watch trigger being watched.
type watch struct {
	w    *fsnotify.Watcher
	name string // the file watched in its directory ("": the directory itself)

	mu    sync.Mutex
	flow  Flow // as the last sync saw it
	t     *graphir.Trigger
	timer *time.Timer
}

// syncWatches watches the watch triggers of flows, and stops watching
// those no longer among them (nil: all).
func (s *Scheduler) syncWatches(flows []Flow) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	seen := map[string]bool{}
	for _, f := range flows {
		for i := range f.Graph.Triggers {
			t := &f.Graph.Triggers[i]
			if t.Kind != graphir.TriggerWatch {
				continue
			}
			key := f.File + "\x00" + t.Key()
			seen[key] = true
			if w := s.watches[key]; w != nil {
				w.mu.Lock()
				w.flow, w.t = f, t
				w.mu.Unlock()
				continue
			}
			w, err := s.startWatch(f, t)
			if err != nil {
				s.logf("%s: %s: %v", f.File, t.Key(), err)
				continue
			}
			if s.watches == nil {
				s.watches = map[string]*watch{}
			}
			s.watches[key] = w
		}
	}
	for key, w := range s.watches {
		if !seen[key] {
			w.w.Close()
			w.mu.Lock()
			if w.timer != nil {
				w.timer.Stop()
			}
			w.mu.Unlock()
			delete(s.watches, key)
		}
	}
}

// startWatch watches the path of trigger t of f: a directory itself, a
// file through its directory (so that a file replaced by a rename is
// still seen).
func (s *Scheduler) startWatch(f Flow, t *graphir.Trigger) (*watch, error) {
	path := filepath.Join(filepath.Dir(f.File), filepath.FromSlash(t.Watch))
	if err := confine.Check(f.Root, path); err != nil {
		return nil, err
	}
	dir, name := path, ""
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		dir, name = filepath.Dir(path), filepath.Base(path)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := fw.Add(dir); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watch %s: %v", t.Watch, err)
	}
	w := &watch{w: fw, name: name, flow: f, t: t}
	go func() {
		for {
			select {
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if ev.Op == fsnotify.Chmod || w.name != "" && filepath.Base(ev.Name) != w.name {
					continue
				}
				w.mu.Lock()
				if w.timer != nil {
					w.timer.Stop()
				}
				w.timer = time.AfterFunc(w.t.Debounce, func() { s.fireWatch(w) })
				w.mu.Unlock()
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				s.logf("watch %s: %v", t.Watch, err)
			}
		}
	}()
	return w, nil
}

// fireWatch queues a run of w's flow, per its overlap policy.
func (s *Scheduler) fireWatch(w *watch) {
	w.mu.Lock()
	f, t := w.flow, w.t
	w.mu.Unlock()
	inputs, err := inputsJSON(t)
	if err == nil {
		_, err = s.Enqueue(f, t.Key(), t.OverlapPolicy(), inputs, "")
	}
	if err != nil {
		s.logf("%s: %s: %v", f.File, t.Key(), err)
		it := &store.QueueItem{File: f.File, Root: f.Root, Name: f.Graph.Name, Inputs: inputs, Trigger: t.Key(),
			State: store.QueueFailed, Error: err.Error(), Enqueued: s.now(), Ended: s.now()}
		s.Store.Enqueue(it)
	}
}
