//go:build race

package servertest

// raceEnabled: the suite runs with -race, and builds skein with it too.
const raceEnabled = true
