//go:build race

package vm_test

// raceEnabled: the tests run with -race, whose runtime allocates
// differently (what a test counts in bytes allocated is not the plain
// build's).
const raceEnabled = true
