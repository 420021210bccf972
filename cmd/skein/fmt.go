package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
)

type fmtOptions struct {
	write, check bool
}

func init() {
	register(&command{
		name:    "fmt",
		args:    "[-w | --check] PATH...",
		summary: "format flow files the way buildifier formats Starlark",
		long: `Formats .star files the way buildifier formats Starlark, keeping comments,
and never changing what a flow means. A directory stands for the .star files
under it (hidden directories and symbolic links are skipped), and - for
standard input (for editors' format commands). Without a flag the formatted
text is printed; -w rewrites the files that change (through a link, the file
it points to; a read-only file is refused); --check lists them instead.

A file that does not parse is reported as file:line:col and left untouched.

Exit status: 0 when all is well, 1 when --check found files to format, 2 on
bad usage or a file that does not parse.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *fmtOptions) {
			fs.BoolVarP(&o.write, "write", "w", false, "rewrite the files that are not formatted")
			fs.BoolVar(&o.check, "check", false, "list the files that are not formatted and exit 1 if there are any")
		}, runFmt, nil),
	})
}

func runFmt(_ context.Context, io stdio, opts *fmtOptions, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(io.err, "skein fmt: no file or directory given\nusage: skein fmt [-w | --check] PATH...")
		return exitUsage
	}
	if opts.write && opts.check {
		fmt.Fprintln(io.err, "skein fmt: give -w or --check, not both")
		return exitUsage
	}
	files, err := starFiles(args)
	if err != nil {
		fmt.Fprintf(io.err, "skein fmt: %v\n", err)
		return exitUsage
	}
	status := exitOK
	for _, file := range files {
		var src []byte
		var err error
		if file == "-" {
			if opts.write {
				fmt.Fprintln(io.err, "skein fmt: -w cannot rewrite standard input")
				return exitUsage
			}
			src, err = readBounded(io.in, "standard input")
			file = "<stdin>"
		} else {
			// As flows are read: a device, a pipe or a file over the
			// size limit is refused, never read without end.
			src, err = lang.ReadFile(file)
		}
		if err != nil {
			fmt.Fprintf(io.err, "skein fmt: %v\n", err)
			status = exitUsage
			continue
		}
		out, err := lang.Format(file, src)
		if err != nil {
			fmt.Fprintln(io.err, graphir.AsError(err))
			status = exitUsage
			continue
		}
		switch {
		case opts.check:
			if !bytes.Equal(src, out) {
				fmt.Fprintln(io.out, file)
				if status == exitOK {
					status = exitFail
				}
			}
		case opts.write:
			if !bytes.Equal(src, out) {
				if err := replaceFile(file, out); err != nil {
					fmt.Fprintf(io.err, "skein fmt: %v\n", err)
					status = exitUsage
				}
			}
		default:
			io.out.Write(out)
		}
	}
	return status
}

// starFiles expands the paths given: a file (or - for standard input)
// stands for itself, a directory for the regular .star files under it,
// outside hidden directories, sorted.
func starFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %v", p, unwrapPath(err))
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			// A symbolic link found in a directory is left alone: it may
			// point out of the directory named, or at a file the walk
			// reaches anyway. Named on the command line, it is followed.
			if d.Type().IsRegular() && strings.HasSuffix(path, ".star") {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

// readBounded reads r to its end, refusing more than [lang.MaxFileSize]
// bytes (the limit on a flow file), as what names it.
func readBounded(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, lang.MaxFileSize+1))
	if err == nil && len(b) > lang.MaxFileSize {
		err = fmt.Errorf("%s: larger than the limit of %d MiB", what, lang.MaxFileSize>>20)
	}
	return b, err
}

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// replaceFile writes data to file through a temporary file in the same
// directory, so that a failure part way leaves the old contents whole. The
// file keeps its permissions. Through a symbolic link, the file it points
// to is rewritten and the link stays a link. A file that may not be
// written (no write permission, as a direct write would find) is refused:
// renaming over it would only need the directory to be writable.
func replaceFile(file string, data []byte) error {
	target, err := filepath.EvalSymlinks(file)
	if err != nil {
		return err
	}
	info, err := os.Stat(target)
	if err != nil {
		return err
	}
	if info.Mode().Perm()&0o222 == 0 || syscall.Access(target, 2 /* W_OK */) != nil {
		return fmt.Errorf("cannot rewrite %s: it is read-only", file)
	}
	return writeFileAtomic(target, data, info.Mode().Perm())
}

// writeFileAtomic writes data to file with mode perm through a temporary
// file renamed over it, so a failure never leaves half a file.
func writeFileAtomic(file string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
