package vm

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// appendMillis writes what strconv.AppendFloat writes for the duration in
// milliseconds with three decimals (the --events duration_ms).
func TestAppendMillisMatchesFloat(t *testing.T) {
	ds := []time.Duration{0, 1, 499, 500, 501, 999, 1000, 1499, 1500, 1501, 999_499, 999_500, 999_501,
		time.Millisecond, time.Second, time.Hour, 1e15 - 1, 1e15, 1e18, -1, -1500}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		ds = append(ds, time.Duration(r.Int64N(1e13)), time.Duration(r.Int64N(1e7)), time.Duration(r.Int64N(1e4)*1000+500))
	}
	for _, d := range ds {
		want := strconv.AppendFloat(nil, float64(d)/float64(time.Millisecond), 'f', 3, 64)
		if got := appendMillis(nil, d); string(got) != string(want) {
			t.Fatalf("appendMillis(%d) = %s, want %s", d, got, want)
		}
	}
}
