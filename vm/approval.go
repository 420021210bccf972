package vm

// This file is how an approval step ends, the same on every engine: the
// completion of a decision and of a timeout.

import (
	"fmt"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
)

// ApprovalDecision is the completion of an approval decided by by at at:
// approved, the output {approved: True, by, reason, at}, with values (the
// fields' values, bound by [graphir.BindFields]) when the step declares
// fields (values is nil when it does not); rejected, a failure with code
// rejected (which on = "failure" can route).
func ApprovalDecision(approved bool, by, reason string, at time.Time, values starlark.Value) *EffectCompletion {
	if !approved {
		msg := "rejected by " + by
		if reason != "" {
			msg += ": " + reason
		}
		return &EffectCompletion{Code: codes.Rejected, Error: msg}
	}
	b := stdlib.NewMapBuilder(5)
	b.Add("approved", starlark.True)
	b.Add("by", starlark.String(by))
	b.Add("reason", starlark.String(reason))
	b.Add("at", starlark.String(at.UTC().Format(time.RFC3339)))
	if values != nil {
		b.Add("values", values)
	}
	return &EffectCompletion{OK: true, Output: b.Map()}
}

// Fields returns the fields whose values a decision on req gives: those
// of its approval step; none for a tool call's approval.
func (req *EffectRequest) Fields() []graphir.Input {
	if req.Kind != graphir.KindApproval || req.Node == nil || req.Node.Kind != graphir.KindApproval {
		return nil
	}
	return req.Node.Fields
}

// ApprovalTimedOut is the completion of an approval that got no decision
// within its step's timeout.
func ApprovalTimedOut(timeout time.Duration) *EffectCompletion {
	return &EffectCompletion{Code: codes.Timeout, Error: fmt.Sprintf("no decision within %s", timeout)}
}
