//go:build !skein_crashtest

package store

// This file is the crash-injection hooks of every build but a test's
// (faults_on.go, the skein_crashtest tag): none. The hooks are empty
// constants, so the compiler drops the code that would read them, and no
// environment variable can make a shipped skein kill itself.

const (
	faultStep  = ""
	faultBatch = ""
	faultSide  = ""
)

// crash is never called: no hook is set.
func crash() { panic("store: a crash hook fired in a build without them") }
