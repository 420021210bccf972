package main

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestRunScripts runs the scripts in testdata/run: `skein run` exit
// statuses, --json, --events, inputs, and Ctrl-C during a run.
func TestRunScripts(t *testing.T) {
	p := scriptParams("testdata/run")
	p.Cmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"waitfile": cmdWaitFile,
		"pgone":    cmdProcessGroupGone,
		"pidgone":  cmdProcessGone,
	}
	testscript.Run(t, p)
}

// hangGuard bounds the scripts' waits (waitfile, pidgone, pgone,
// modelwait): generous for a race-enabled skein on a busy machine, and
// never waited out when all is well.
const hangGuard = 60 * time.Second

// waitfile FILE: wait (up to hangGuard) until FILE exists and is not empty.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear", args[0])
}

// waitgrep FILE REGEXP: wait (up to hangGuard) until FILE holds a match
// of REGEXP (multi-line: ^ and $ match at lines).
func cmdWaitGrep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitgrep FILE REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(b) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(ts.MkAbs(args[0]))
	ts.Fatalf("%s never matched %q; it holds:\n%s", args[0], args[1], b)
}

// pidgone FILE: the process whose id FILE holds has ended (and been reaped).
func cmdProcessGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pidgone FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	deadline := time.Now().Add(hangGuard)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			ts.Fatalf("process %d is still running (kill -0: %v)", pid, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pgone FILE: the process group whose id FILE holds has no process left.
// Killed processes linger for a moment until their parent (init, for
// orphans) reaps them, so it polls.
func cmdProcessGroupGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pgone FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	deadline := time.Now().Add(hangGuard)
	for {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("process group %d still has processes (kill -0: %v)", pgid, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
