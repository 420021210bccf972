package runs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/skeinlang/skein/vm/store"
)

// A run that a live process holds (recorded as running, its process
// alive) is not resumed: the error is ErrStillRunning and names the
// process. (The store's HeldError, a resume that another process took
// over since the record was read, needs a second process: vm/store's
// tests and the crash scripts hold it.)
func TestResumeStillRunning(t *testing.T) {
	s, g, _ := setup(t, "deploy.star", deployFlow)

	// Started here and not ended: this process holds it.
	r, err := s.Start(bind(t, g, "v", "1.0"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Store.Get(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != store.Running {
		t.Fatalf("a started run is %s, want running", rec.Status)
	}
	_, _, err = s.Resume(&ResumeSpec{Run: rec, Options: rec.Options})
	holder := fmt.Sprintf("(process %d on ", os.Getpid())
	if !errors.Is(err, ErrStillRunning) || !strings.Contains(err.Error(), holder) {
		t.Fatalf("resume of a running run: %v; want ErrStillRunning naming %s", err, holder)
	}
	r.Cancel()
	run(t, r)

}
