package telemetry

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
)

// TestCarryAttrs: every attribute type a run's spans have comes back from
// being carried as it went; a value that does not decode is left out.
func TestCarryAttrs(t *testing.T) {
	in := []attribute.KeyValue{
		attribute.Bool("b", true), attribute.Int64("i", -7), attribute.Float64("f", 0.25),
		attribute.String("s", "per_file[2]"), attribute.StringSlice("ss", []string{"a", "b"}),
		attribute.Int64Slice("is", []int64{1, 2}), attribute.BoolSlice("bs", []bool{false, true}),
	}
	carried := carryAttrs(in)
	if got := uncarryAttrs(carried); !cmp.Equal(got, in, cmp.Comparer(func(a, b attribute.Value) bool {
		return a.Type() == b.Type() && cmp.Equal(a.AsInterface(), b.AsInterface())
	})) {
		t.Errorf("carried %v, got back %v", in, got)
	}
	carried[1].V = json.RawMessage(`"not a number"`)
	if got := uncarryAttrs(carried); len(got) != len(in)-1 || got[1].Key != "f" {
		t.Errorf("with i undecodable, got back %v", got)
	}
}
