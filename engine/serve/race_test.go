//go:build race

package serve

// raceEnabled: the tests run with -race, under which SQLite (compiled
// from C to Go) is some forty times slower.
const raceEnabled = true
