package runs

// This file sets what a recorded run spent beside its envelope
// (docs/envelope.md), for skein show.

import (
	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/lang/frontend"
)

// Spent is what a recorded run spent, child flows included, in the terms
// of its envelope.
type Spent struct {
	ModelCalls       int     // HTTP requests to models
	CompletionTokens int     // completion tokens of the replies
	Cost             float64 // US dollars of the priced replies
	Processes        int     // task and shell attempts
	Approvals        int     // approvals asked
}

// Spent adds up what rec's effects spent.
func (rec *Record) Spent() Spent {
	var s Spent
	for _, e := range rec.Effects {
		switch {
		case e.Model != "" || e.Usage.Total() > 0:
			s.ModelCalls += max(1, e.Usage.Attempts)
			s.CompletionTokens += e.Usage.CompletionTokens
			s.Cost += e.Usage.Cost
		case e.Kind == "task" || e.Kind == "shell":
			s.Processes++
		}
	}
	s.Approvals = len(rec.Approvals)
	return s
}

// Envelope computes the envelope of rec's flow as the run loaded it, from
// the sources the store keeps; nil when they no longer load.
func (s *Service) Envelope(rec *Record) *check.FlowEnvelope {
	sources, err := s.Store.Sources(rec.Run.ID)
	if err != nil || len(sources) == 0 {
		return nil
	}
	lo := s.Load
	lo.Root, lo.Recorded, lo.Print = rec.Run.Root, frontend.RecordedSources(sources), nil
	f := frontend.Load(rec.Run.File, lo)
	if f.Graph == nil || f.Errors() > 0 {
		return nil
	}
	return check.ComputeEnvelope(f.Graph)
}
