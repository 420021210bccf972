package frontend

// This file defines the sources a load read, kept so that a run records
// exactly the texts it was loaded from, and the recorded sources a resume
// loads from again.

import (
	"errors"
	"maps"
	"os"
	"sync"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
)

// Sources are the files a load read, each once: by absolute path in the
// order first read (the form the run store records), and by the name the
// loader read it under (a run on Temporal loads its flow again from
// those, under the same names, so that messages name files alike). A
// Sources is safe for concurrent use.
type Sources struct {
	mu    sync.Mutex
	files []graphir.Source
	seen  map[string]bool
	named map[string]string
}

// reader wraps read so that what it reads is kept.
func (s *Sources) reader(read func(string) ([]byte, error)) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		b, err := read(name)
		if err == nil {
			s.add(name, b)
		}
		return b, err
	}
}

func (s *Sources) add(name string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen, s.named = map[string]bool{}, map[string]string{}
	}
	abs := confine.Abs(name)
	if !s.seen[abs] {
		s.seen[abs] = true
		s.files = append(s.files, graphir.Source{Path: abs, Text: b})
	}
	s.named[name] = string(b)
}

// List returns the files read, by absolute path, in the order first read.
func (s *Sources) List() []graphir.Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]graphir.Source(nil), s.files...)
}

// ByName returns the texts read by the name the loader read them under.
func (s *Sources) ByName() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.named == nil {
		return map[string]string{}
	}
	return maps.Clone(s.named)
}

// Recorded are the sources recorded with a run, by absolute path: a load
// given them ([Options.Recorded]) reads nothing else.
type Recorded map[string][]byte

// RecordedSources returns the sources as [Recorded]: never nil, so that a
// run that recorded none still loads from its record (and fails to).
func RecordedSources(list []graphir.Source) Recorded {
	r := make(Recorded, len(list))
	for _, s := range list {
		r[s.Path] = s.Text
	}
	return r
}

// Has reports whether the file named is among the sources.
func (r Recorded) Has(name string) bool {
	_, ok := r[confine.Abs(name)]
	return ok
}

// ReadFile reads a file from the sources.
func (r Recorded) ReadFile(name string) ([]byte, error) {
	b, ok := r[confine.Abs(name)]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("not among the run's recorded sources")}
	}
	return b, nil
}
