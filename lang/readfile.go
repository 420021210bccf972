package lang

// This file reads the files a flow is made of, bounded: a flow or module is
// a regular file of at most MaxFileSize bytes, so `skein run /dev/zero` or a
// huge generated file is a load error rather than a read until memory runs
// out.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
)

// MaxFileSize is the largest flow, module or inputs file Skein reads.
const MaxFileSize = 8 << 20

// ReadFile reads the file name if it is a regular file of at most
// MaxFileSize bytes, without a leading UTF-8 byte-order mark. Errors are
// *fs.PathError, as os.ReadFile's are.
func ReadFile(name string) ([]byte, error) {
	b, err := stdlib.ReadRegularFile(name, MaxFileSize)
	if err != nil {
		return nil, err
	}
	return dropBOM(b), nil
}

// dropBOM returns src without the UTF-8 byte-order mark some editors
// write first (Notepad, Visual Studio): Starlark would take it for a
// character of the first line and refuse it; editors do not count it.
func dropBOM(src []byte) []byte {
	return bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
}

// tooBig is the error of a file over [MaxFileSize], read from disk or
// given as an editor's buffer.
func tooBig(name string) error {
	return &os.PathError{Op: "read", Path: name, Err: &stdlib.TooLargeError{Max: MaxFileSize}}
}

// FileError is the load_error at file for err, an error from [ReadFile]:
// "cannot read FILE: why" for a file that is missing, not regular or larger
// than [MaxFileSize], as every loader of flows, modules and test files says
// it. file is the name to show.
func FileError(file string, err error) *graphir.Error {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = fmt.Sprintf("cannot read %s: %v", file, pe.Err)
	}
	return &graphir.Error{Code: codes.LoadError, Pos: graphir.Pos{File: file}, Msg: msg, Err: err}
}
