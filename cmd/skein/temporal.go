//go:build temporal

package main

// A skein built with -tags temporal links the Temporal engine in: its
// package registers itself with the run service (runs.RegisterEngine), and
// --engine temporal and skein worker reach it through runs.Engine.

import _ "github.com/skeinlang/skein/engine/temporal"
