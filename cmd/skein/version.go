package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release of the language contract this binary implements.
const version = "0.1.0"

func init() {
	register(&command{
		name:    "version",
		summary: "print the version of skein",
		run: func(_ context.Context, io stdio, args []string) int {
			if len(args) > 0 {
				fmt.Fprintf(io.err, "skein version: takes no arguments, got %q\nusage: skein version\n", args[0])
				return exitUsage
			}
			rev := ""
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" && len(s.Value) >= 12 {
						rev = " " + s.Value[:12]
					}
				}
			}
			fmt.Fprintf(io.out, "skein %s%s (%s, %s/%s)\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return exitOK
		},
	})
}
