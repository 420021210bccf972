package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinlang/skein/lsp"
)

func init() {
	register(&command{
		name:    "lsp",
		args:    "",
		summary: "run the language server on stdin and stdout (for editors)",
		long: `Speaks the Language Server Protocol on standard input and output: the
checker's diagnostics as you type (for the files a flow loads too), hover,
go to definition, completion, document symbols and formatting. Editors start
it themselves; docs/editors.md shows the settings for VS Code, Neovim and
Helix. What it logs goes to standard error.

Exit status: 0 after the editor's shutdown and exit, 1 otherwise.`,
		run: runLSP,
	})
}

func runLSP(_ context.Context, io stdio, args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(io.err, "skein lsp: takes no arguments\nusage: skein lsp")
		return exitUsage
	}
	s := &lsp.Server{Log: io.err}
	if err := s.Serve(io.in, io.out); err != nil {
		if !errors.Is(err, lsp.ErrNoShutdown) {
			fmt.Fprintf(io.err, "skein lsp: %v\n", err)
		}
		return exitFail
	}
	return exitOK
}
