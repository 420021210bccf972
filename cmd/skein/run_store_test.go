package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestStoreScripts runs the scripts in testdata/store: recording runs, the
// store's location, runs/show/logs/gc, resume and approvals.
func TestStoreScripts(t *testing.T) {
	p := scriptParams("testdata/store")
	p.Cmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"waitfile": cmdWaitFile,
		"killpg":   cmdKillGroup,
	}
	testscript.Run(t, p)
}

// killpg FILE: kill the process group whose id FILE holds (what a task left
// running when skein was killed under it).
func cmdKillGroup(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: killpg FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	syscall.Kill(-pgid, syscall.SIGKILL)
}
