package stdlib

import "testing"

// SkipBigUnderRace skips a test that builds values of many megabytes to
// prove a bound: under -race it takes 20-70 times as long (35 s for
// TestJSONTooBig) and has one goroutine for the detector to watch. make
// test runs these tests again without -race (BIG_TESTS in the Makefile).
func SkipBigUnderRace(t testing.TB) {
	t.Helper()
	if RaceEnabled {
		t.Skip("builds values of many megabytes, slow under -race; make test runs it without (BIG_TESTS)")
	}
}
