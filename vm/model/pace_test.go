package model_test

import (
	"context"
	"testing"
	"time"

	"github.com/skeinlang/skein/internal/fakeclock"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// tpm= charges the tokens a reply reports: once a minute's tokens are
// spent, the next call waits until the bucket has refilled enough.
func TestPacingTokensPerMinute(t *testing.T) {
	srv := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "ok", Prompt: 60, Completion: 40}}})
	defer srv.Close()
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	start := clock.Now()
	pacers := &model.Pacers{Now: clock.Now, SleepUntil: clock.SleepUntil}
	req := model.Request{Endpoint: model.Endpoint{BaseURL: srv.BaseURL(), TPM: 100}, Model: "m",
		Messages: []model.Message{{Role: "user", Content: "hi"}}}
	var sent []time.Duration
	for range 3 {
		if _, err := model.Call(context.Background(), &model.Client{}, req, model.Policy{Pacers: pacers}); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, clock.Now().Sub(start))
	}
	// 100 tokens a minute, each call 100 tokens: the first two go at
	// once (a minute's burst, a token's wait), the third waits for the
	// bucket to refill from its debt, a minute later.
	if sent[1] > time.Second || sent[2] < time.Minute {
		t.Errorf("calls sent at %v", sent)
	}
}
