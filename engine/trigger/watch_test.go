package trigger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/skeinlang/skein/vm/store"
)

// TestWatchTrigger: files written into a watched directory in a burst
// queue a run once the burst settles (fewer runs than files), with the
// trigger's inputs; a flow no longer given stops being watched.
func TestWatchTrigger(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	os.Mkdir(filepath.Join(dir, "inbox"), 0o755)
	f := loadFlow(t, dir, "intake.star", `
flow(inputs = {"source": ""})
trigger(watch = "inbox", debounce = "300ms", overlap = "queue", inputs = {"source": "inbox"})
a = step("a", run = ["true"])
chain(START, a, END)
`)
	flows := []Flow{f}
	s := &Scheduler{Store: st, Runner: &fakeRunner{}, Flows: func() []Flow { return flows }}
	s.Tick() // watching from now
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	for i := range 5 {
		os.WriteFile(filepath.Join(dir, "inbox", fmt.Sprintf("ticket-%d", i)), []byte("help"), 0o644)
	}
	var q []*store.QueueItem
	for {
		changed := s.Changed()
		q = items(t, st)
		if len(q) > 0 && q[len(q)-1].State == store.QueueDone {
			break
		}
		<-changed
	}
	cancel()
	<-done
	s.Wait()
	if len(q) == 0 || len(q) >= 5 {
		t.Errorf("%d runs queued for a burst of 5 files, want at least 1 and fewer than 5", len(q))
	}
	if q[0].Trigger != "watch inbox" || string(q[0].Inputs) != `{"source":"inbox"}` {
		t.Errorf("item %+v", q[0])
	}
	if len(s.watches) != 0 {
		t.Errorf("%d watches left after Run ended", len(s.watches))
	}
}
