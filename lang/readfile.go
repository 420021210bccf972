package lang

// This file reads the files a flow is made of, bounded: a flow or module is
// a regular file of at most MaxFileSize bytes, so `skein run /dev/zero` or a
// huge generated file is a load error rather than a read until memory runs
// out.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/skeinlang/skein/graphir"
)

// MaxFileSize is the largest flow, module or inputs file Skein reads.
const MaxFileSize = 8 << 20

// ReadFile reads the file name if it is a regular file of at most
// MaxFileSize bytes, without a leading UTF-8 byte-order mark. Errors are
// *fs.PathError, as os.ReadFile's are.
func ReadFile(name string) ([]byte, error) {
	// O_NONBLOCK: opening a named pipe to read would otherwise wait for a
	// writer, forever; it changes nothing for a regular file.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &os.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: name, Err: fmt.Errorf("not a regular file (%s)", fileKind(fi.Mode()))}
	}
	tooBig := tooBig(name)
	if fi.Size() > MaxFileSize {
		return nil, tooBig
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, tooBig
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
	return &os.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than the limit of %d MiB", MaxFileSize>>20)}
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
	return &graphir.Error{Code: "load_error", Pos: graphir.Pos{File: file}, Msg: msg, Err: err}
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}
