package main

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestStoreScripts runs the scripts in testdata/store: recording runs, the
// store's location, runs/show/logs/gc, resume and approvals.
func TestStoreScripts(t *testing.T) {
	p := scriptParams("testdata/store")
	p.Cmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"waitfile": cmdWaitFile,
	}
	testscript.Run(t, p)
}
