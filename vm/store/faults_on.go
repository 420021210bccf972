//go:build skein_crashtest

package store

// This file is the crash-injection hooks of a build with the
// skein_crashtest tag, which only tests make (cmd/skein's TestCrashScripts
// builds such a skein): each variable names a step at whose point of
// recording the process kills itself, to prove that a crash there loses
// nothing a resume cannot redo. faults_off.go is every other build's.

import (
	"os"
	"syscall"
)

// faultStep names a step whose completions are never committed: the
// process kills itself between the effect's end and the commit. Tests set
// it to prove that such a crash loses nothing but that one attempt.
var faultStep = os.Getenv("SKEIN_TEST_CRASH_BEFORE_COMMIT")

// faultBatch names a step whose start row is never committed: the process
// kills itself before committing the batch that holds it, after the run
// was handed the completions queued before it. Tests set it to prove that
// such a crash leaves nothing acted on.
var faultBatch = os.Getenv("SKEIN_TEST_CRASH_BEFORE_BATCH")

// faultSide names a step whose completion reaches the side journal but
// never SQLite: the process commits nothing to SQLite and kills itself
// once the batch holding that completion is in the side journal. Tests
// set it to prove that such a crash loses nothing: the completion is
// folded in. With it set, as with faultBatch, only the run going idle
// commits (the batch holds the completion and the start rows it led to):
// name a step that other steps follow, or the run's end commits its
// completion straight to SQLite.
var faultSide = os.Getenv("SKEIN_TEST_CRASH_AFTER_JOURNAL")

// crash kills this process at once, as a power cut or kill -9 would.
func crash() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
