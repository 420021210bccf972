package graphir

import (
	"errors"
	"fmt"
	"testing"
)

func TestAsError(t *testing.T) {
	ge := &Error{Code: "bad_edge", Msg: "no such step", Pos: Pos{File: "f.star", Line: 3, Col: 1}}
	if got := AsError(ge); got != ge {
		t.Errorf("AsError(*Error) = %v, want it unchanged", got)
	}
	// Wrapped, it is still found, with its code and position.
	if got := AsError(fmt.Errorf("loading: %w", ge)); got != ge {
		t.Errorf("AsError(wrapped) = %#v, want the wrapped *Error", got)
	}
	got := AsError(errors.New("open f.star: no such file"))
	if got.Code != "load_error" || got.Msg != "open f.star: no such file" || got.Pos.IsValid() {
		t.Errorf("AsError(plain) = %#v", got)
	}
	if AsError(nil) != nil {
		t.Error("AsError(nil) is not nil")
	}
}
