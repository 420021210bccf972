package main

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The scripts in testdata/script run the skein command line the way a
// user would (exec skein check flow.star) and compare what it prints.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"skein": func() {
			os.Exit(Main(context.Background(), os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
		},
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE") == "1",
	})
}
