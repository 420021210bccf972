//go:build race

package stdlib

// RaceEnabled: the tests run with -race (exported for stdlib_test).
const RaceEnabled = true
