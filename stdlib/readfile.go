package stdlib

// This file reads a file Skein is given by name (a flow, a module, an
// inputs file, a cassette), bounded: a regular file of at most a given
// size, so that a named pipe, a device or a huge file is an error rather
// than a wait or a read until memory runs out. The loader (lang) and the
// model client (vm/model), which may not import each other, share it.

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is why a file that is not a regular file (nor a
// directory) was not read: Kind says what it is ("a named pipe").
type NotRegularError struct{ Kind string }

func (e *NotRegularError) Error() string { return fmt.Sprintf("not a regular file (%s)", e.Kind) }

// TooLargeError is why a file over the bound was not read.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than the limit of %d MiB", e.Max>>20)
}

// ReadRegularFile reads the file name if it is a regular file of at most
// max bytes. Errors are *fs.PathError, as os.ReadFile's are; their Err is
// syscall.EISDIR for a directory, a *NotRegularError or a *TooLargeError.
func ReadRegularFile(name string, max int64) ([]byte, error) {
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
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: &NotRegularError{fileKind(fi.Mode())}}
	}
	tooBig := &fs.PathError{Op: "read", Path: name, Err: &TooLargeError{max}}
	if fi.Size() > max {
		return nil, tooBig
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, tooBig
	}
	return b, nil
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
