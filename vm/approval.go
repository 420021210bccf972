package vm

// This file is how an approval step ends, the same on every engine: the
// completion of a decision and of a timeout.

import (
	"fmt"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
)

// ApprovalDecision is the completion of an approval decided by by at at:
// approved, the output {approved: True, by, reason, at}; rejected, a
// failure with code rejected (which on = "failure" can route).
func ApprovalDecision(approved bool, by, reason string, at time.Time) *EffectCompletion {
	if !approved {
		msg := "rejected by " + by
		if reason != "" {
			msg += ": " + reason
		}
		return &EffectCompletion{Code: codes.Rejected, Error: msg}
	}
	return &EffectCompletion{OK: true, Output: stdlib.NewMap([]string{"approved", "by", "reason", "at"},
		[]starlark.Value{starlark.True, starlark.String(by), starlark.String(reason), starlark.String(at.UTC().Format(time.RFC3339))})}
}

// ApprovalTimedOut is the completion of an approval that got no decision
// within its step's timeout.
func ApprovalTimedOut(timeout time.Duration) *EffectCompletion {
	return &EffectCompletion{Code: codes.Timeout, Error: fmt.Sprintf("no decision within %s", timeout)}
}
