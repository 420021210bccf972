module github.com/skeinlang/skein

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/spf13/pflag v1.1.0
	go.starlark.net v0.0.0-20260908191801-89a6a09411d5
	golang.org/x/term v0.48.0
)

require (
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
