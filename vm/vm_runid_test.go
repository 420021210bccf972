package vm

import (
	"testing"
	"time"
)

func TestIsRunID(t *testing.T) {
	if id := NewRunID(time.Now()); !IsRunID(id) {
		t.Errorf("IsRunID(%q) = false for a new run id", id)
	}
	for _, s := range []string{"last", "20261201T140229", "20261201T140229.989Z", "20261201T140229.989Z-268e766", "20261201T140229.989Z-268e766g", "x0261201T140229.989Z-268e766f"} {
		if IsRunID(s) {
			t.Errorf("IsRunID(%q) = true", s)
		}
	}
}
