package store

// This file is the side journal: an append-only file per run beside the
// database, in which the Recorder makes each batch of journal writes
// durable with one write(2) before the run acts on it. The batches reach
// SQLite later, several at a time, off the run's critical path (a SQLite
// commit in a loop of short tasks costs as much as a tenth of the task).
// A run whose process died has its side journal folded into SQLite before
// anything reads or continues it.
//
// The file is a header record and then one record per batch. A record is
// its payload's length and CRC-32C (Castagnoli), 4 bytes each, little
// endian, then the payload. The header's payload is sideMagic and the
// owner: the run's id, the host, the pid and the process's start time. A
// batch's payload is its number of writes, then each write: its kind
// (wIns, wEnd), its number of arguments and the arguments, each a tag and
// a value (varints for integers, a length and the bytes for strings). A
// record that is cut short or fails its CRC ends the file: the write that
// made it never returned, so nothing was acted on.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sideMagic opens the header's payload (and names the format's version).
// Version 1's start rows had no rendered column (insArgs1 arguments);
// versions 1 and 2's ends had no usage column (endArgs2 arguments). A
// side journal of an older version, left by a skein that died before an
// upgrade, still folds in.
const (
	sideMagic  = "skein-side-journal 3\n"
	sideMagic2 = "skein-side-journal 2\n"
	sideMagic1 = "skein-side-journal 1\n"
)

// Kinds of write in a batch record.
const (
	wEnd byte = iota
	wIns
)

// Tags of a value in a write's arguments.
const (
	tNil byte = iota
	tInt
	tStr
	tFalse
	tTrue
)

// frameHeader is a record's length and CRC-32C before its payload.
const frameHeader = 8

// insArgs and endArgs are how many arguments a start row and an end take
// (see queueStart and queueEnd).
const (
	insArgs  = 10
	insArgs1 = 9 // version 1's
	endArgs  = 16
	endArgs2 = 15 // versions 1 and 2's
)

// sideHeader is the owner of a side journal.
type sideHeader struct {
	run, host string
	pid       int
	start     string
}

// sideDir is the directory of the store's side journals: beside the
// database's real file, as SQLite keeps its write-ahead log, so that
// every process finds the same one whatever link it opened the store by
// (one that opened it through a link would leave its side journal where
// the others never look).
func (s *Store) sideDir() string { return s.real + "-side" }

// sidePath is the side journal of run id owned by this process (pid and
// start time: unique among the processes that ever ran on the host).
func (s *Store) sidePath(id string, pid int, start string) string {
	return filepath.Join(s.sideDir(), fmt.Sprintf("%s.%d.%s", id, pid, start))
}

// frame appends to b a record of the payload that appendPayload appends.
func frame(b []byte, appendPayload func([]byte) ([]byte, error)) ([]byte, error) {
	start := len(b)
	b = append(b, make([]byte, frameHeader)...)
	b, err := appendPayload(b)
	if err != nil {
		return b[:start], err
	}
	payload := b[start+frameHeader:]
	if len(payload) > math.MaxUint32 {
		return b[:start], errors.New("journal record too large")
	}
	binary.LittleEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(payload, castagnoli))
	return b, nil
}

func appendHeader(b []byte, h sideHeader) []byte {
	b, _ = frame(b, func(b []byte) ([]byte, error) {
		b = append(b, sideMagic...)
		b = appendString(b, h.run)
		b = appendString(b, h.host)
		b = binary.AppendVarint(b, int64(h.pid))
		return appendString(b, h.start), nil
	})
	return b
}

// appendBatch appends the record of batch (start rows and ends only).
func appendBatch(b []byte, batch []write) ([]byte, error) {
	return frame(b, func(b []byte) ([]byte, error) {
		b = binary.AppendUvarint(b, uint64(len(batch)))
		for _, w := range batch {
			if w.fin {
				return b, errors.New("a run's end row in the side journal")
			}
			k := wEnd
			if w.ins {
				k = wIns
			}
			b = append(b, k)
			b = binary.AppendUvarint(b, uint64(len(w.args)))
			for _, a := range w.args {
				var err error
				if b, err = appendValue(b, a); err != nil {
					return b, err
				}
			}
		}
		return b, nil
	})
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, tNil), nil
	case int:
		return binary.AppendVarint(append(b, tInt), int64(v)), nil
	case int64:
		return binary.AppendVarint(append(b, tInt), v), nil
	case string:
		return appendString(append(b, tStr), v), nil
	case bool:
		if v {
			return append(b, tTrue), nil
		}
		return append(b, tFalse), nil
	}
	return b, fmt.Errorf("journal value of type %T", v)
}

// decoder reads a record's payload; a malformed one sets bad.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 { return taken(d, binary.Uvarint) }

func (d *decoder) varint() int64 { return taken(d, binary.Varint) }

// taken reads one varint with read (binary.Uvarint or binary.Varint).
func taken[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) value() any {
	switch d.byte() {
	case tNil:
		return nil
	case tInt:
		return d.varint()
	case tStr:
		return d.string()
	case tFalse:
		return false
	case tTrue:
		return true
	}
	d.bad = true
	return nil
}

// nextRecord splits the first record off b: its payload and the rest, or
// ok false if b does not start with a whole record whose CRC matches.
func nextRecord(b []byte) (payload, rest []byte, ok bool) {
	if len(b) < frameHeader {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-frameHeader) {
		return nil, nil, false
	}
	payload = b[frameHeader : frameHeader+int(n)]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, nil, false
	}
	return payload, b[frameHeader+int(n):], true
}

// decodeSide reads a side journal: its header and the writes of its whole
// records, in order, up to the first record that is torn, corrupt or not
// a batch of well-formed start rows and ends. ok is false if there is no
// whole header (nothing was ever acted on).
func decodeSide(b []byte) (h sideHeader, writes []write, ok bool) {
	payload, b, ok := nextRecord(b)
	ins, end := insArgs, endArgs
	switch {
	case !ok:
		return h, nil, false
	case bytes.HasPrefix(payload, []byte(sideMagic)):
	case bytes.HasPrefix(payload, []byte(sideMagic2)):
		end = endArgs2
	case bytes.HasPrefix(payload, []byte(sideMagic1)):
		ins, end = insArgs1, endArgs2
	default:
		return h, nil, false
	}
	d := decoder{b: payload[len(sideMagic):]} // (the magics are as long)
	h.run, h.host = d.string(), d.string()
	pid := d.varint()
	h.start = d.string()
	if d.bad || len(d.b) != 0 || pid < 0 || pid > math.MaxInt32 {
		return sideHeader{}, nil, false
	}
	h.pid = int(pid)
	for {
		payload, rest, ok := nextRecord(b)
		if !ok {
			return h, writes, true
		}
		batch, ok := decodeBatch(payload, ins, end)
		if !ok {
			return h, writes, true
		}
		writes = append(writes, batch...)
		b = rest
	}
}

// decodeBatch reads a batch record's payload, whose start rows have ins
// arguments and ends end (insArgs1 in version 1: the rendered column,
// missing, is nil; endArgs2 before version 3: the usage column, missing,
// is nil).
func decodeBatch(payload []byte, ins, end int) ([]write, bool) {
	d := decoder{b: payload}
	n := d.uvarint()
	if n == 0 || n > uint64(len(payload)) {
		return nil, false
	}
	out := make([]write, 0, n)
	for ; n > 0 && !d.bad; n-- {
		var w write
		want := uint64(end)
		switch d.byte() {
		case wIns:
			w.ins, want = true, uint64(ins)
		case wEnd:
		default:
			return nil, false
		}
		if d.uvarint() != want {
			return nil, false
		}
		w.args = make([]any, want, max(want, insArgs, endArgs))
		for i := range w.args {
			w.args[i] = d.value()
		}
		if w.ins && want < insArgs {
			w.args = append(w.args, nil) // version 1: nothing rendered
		}
		if !w.ins && want < endArgs {
			// Before version 3: no usage, which goes before the id.
			w.args = append(w.args, w.args[want-1])
			w.args[want-1] = nil
		}
		if !wellTyped(w) {
			return nil, false
		}
		out = append(out, w)
	}
	if d.bad || len(d.b) != 0 {
		return nil, false
	}
	return out, true
}

// wellTyped reports whether w's arguments have the types its statement
// binds where they matter to the fold: the effect id and the run.
func wellTyped(w write) bool {
	if w.ins {
		_, id := w.args[0].(int64)
		_, run := w.args[1].(int64)
		return id && run
	}
	_, id := w.args[endArgs-1].(int64)
	return id
}

// isAlive is alive (a variable for tests, whose side journals are their
// own process's).
var isAlive = alive

// sideFile is a run's open side journal.
type sideFile struct {
	f      *os.File
	path   string
	header int64 // the header's length
	off    int64 // bytes written (changed holding Recorder.mu)
	buf    []byte
}

// sideMaxBytes, when set, bounds every side journal to that many bytes:
// a write past it fails as on a full disk (ENOSPC). Tests set it to prove
// that a side journal filling up stops the run cleanly.
var sideMaxBytes = os.Getenv("SKEIN_TEST_SIDE_MAX_BYTES")

// sideOpening, when set, is called by openSide once the side journal's
// file is made and before its header is written (tests fold then).
var sideOpening func()

// openSide creates the side journal of run id for this process and
// writes its header. The header is written under a name no fold reads
// (sideTemp), and the file then takes its own name: a fold never finds a
// live run's side journal without its owner in it (and would take an
// empty one for a dead run's that held nothing, and delete it, while the
// run goes on writing into the deleted file). The file is made anew,
// never opened through a link someone left in its place.
func (s *Store) openSide(id string) (*sideFile, error) {
	pid, start, host := owner()
	path := s.sidePath(id, pid, start)
	s.waitRemoved() // (a run's own, when it is continued at once)
	if err := os.MkdirAll(s.sideDir(), 0o755); err != nil {
		return nil, unwrapPath(err)
	}
	tmp := sideTemp(path, host)
	os.Remove(tmp) // (what a failed openSide of this process left)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if sideOpening != nil {
		sideOpening()
	}
	sf := &sideFile{f: f, path: tmp}
	b := appendHeader(nil, sideHeader{run: id, host: host, pid: pid, start: start})
	err = sf.write(b)
	if err == nil {
		err = unwrapPath(os.Rename(tmp, path))
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	sf.path = path
	sf.header = sf.off
	return sf, nil
}

// sideTemp is where openSide writes the header of the side journal at
// path, owned by this process on host: "." and the journal's name, "@"
// and the host.
func sideTemp(path, host string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"@"+host)
}

// sweepTemp deletes the side journal being made whose name is name (see
// sideTemp) if its process is gone: it crashed between making the file
// and naming it, and nothing was ever acted on.
func (s *Store) sweepTemp(name string) {
	rest, ok := strings.CutPrefix(name, ".")
	at := strings.LastIndexByte(rest, '@')
	if !ok || at < 0 {
		return
	}
	base, host := rest[:at], rest[at+1:]
	dot := strings.LastIndexByte(base, '.')
	if dot < 0 {
		return
	}
	start := base[dot+1:]
	base = base[:dot]
	pid, err := strconv.Atoi(base[strings.LastIndexByte(base, '.')+1:])
	if err != nil || isAlive(pid, start, host) {
		return
	}
	os.Remove(filepath.Join(s.sideDir(), name))
}

// write writes b with one write(2).
func (sf *sideFile) write(b []byte) error {
	if sideMaxBytes != "" {
		var limit int64
		fmt.Sscan(sideMaxBytes, &limit)
		if sf.off+int64(len(b)) > limit {
			return &os.PathError{Op: "write", Path: sf.path, Err: syscall.ENOSPC}
		}
	}
	n, err := sf.f.Write(b)
	sf.off += int64(n)
	return err
}

// close closes the side journal and keeps it.
func (sf *sideFile) close() {
	rec := sf.f
	if rec != nil {
		rec.Close()
		sf.f = nil
	}
}

// removeLater closes the side journal and deletes it on a goroutine of
// its own, which openSide and Close wait for.
func (sf *sideFile) removeLater(s *Store) {
	f, path := sf.f, sf.path
	if f == nil {
		return
	}
	sf.f = nil
	s.removing.add(1)
	go func() {
		defer s.removing.add(-1)
		f.Close()
		os.Remove(path)
	}()
}

// remove closes the side journal and deletes it.
func (sf *sideFile) remove() {
	if sf.f != nil {
		sf.f.Close()
		os.Remove(sf.path)
		sf.f = nil
	}
}

// foldDead folds into the database the side journals whose processes are
// gone, each in its own transaction, and deletes them; a side journal it
// cannot fold (the store cannot be written) stays for a later try. Only
// those of run id if id is not "".
func (s *Store) foldDead(id string) error {
	ents, err := os.ReadDir(s.sideDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no side journal was ever written here
	} else if err != nil {
		return unwrapPath(err)
	}
	var first error
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			if id == "" {
				s.sweepTemp(e.Name())
			}
			continue
		}
		if id != "" && !strings.HasPrefix(e.Name(), id+".") {
			continue
		}
		if err := s.foldFile(filepath.Join(s.sideDir(), e.Name())); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// foldFile folds the side journal at path into the database, if its
// process is gone, in one immediate transaction, and then deletes it.
// Folding is idempotent (a start row already in is kept, an end or a
// whole row writes the same columns again), so two processes folding the
// same file one after the other, or a fold that crashed before deleting
// the file, leave the same rows.
func (s *Store) foldFile(path string) error {
	b, err := readSide(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // folded and deleted meanwhile
	} else if err != nil {
		// Not taken for folded: continuing its run would run again
		// what it holds.
		return fmt.Errorf("cannot read the side journal %v", unwrapPath(err))
	}
	h, writes, ok := decodeSide(b)
	if !ok && otherVersion(b) {
		// A newer skein's: what it holds is its run's, and only that
		// skein can fold it.
		return fmt.Errorf("the side journal %s was written by another version of skein: open the store with that version to fold it in", path)
	}
	if ok && isAlive(h.pid, h.start, h.host) {
		return nil // its run goes on
	}
	if ok && len(writes) > 0 {
		if err := s.fold(h.run, writes); err != nil {
			return fmt.Errorf("cannot fold the journal of run %s: %v", h.run, storeErr(err))
		}
	}
	os.Remove(path)
	return nil
}

// sideMaxRead bounds the side journal a fold reads: the batches of one
// run that SQLite has not taken in yet, emptied once it has (see
// sideTruncateAt). (A variable for tests.)
var sideMaxRead int64 = 1 << 30

// errNotRegular is openRegular's for what skein never makes in the side
// and live folders: a link, a FIFO, a device, a directory.
var errNotRegular = errors.New("not a regular file")

// readSide reads the side journal at path: a regular file (opened
// without following a link, and without waiting for a FIFO's writer) of
// at most sideMaxRead bytes. Anything else in the folder (a FIFO, a link
// to /dev/zero) would hang or exhaust every command that opens the store.
func readSide(path string) ([]byte, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > sideMaxRead {
		return nil, fmt.Errorf("%s: %d bytes, past the bound of a side journal (%d)", path, fi.Size(), sideMaxRead)
	}
	return io.ReadAll(io.LimitReader(f, sideMaxRead))
}

// openRegular opens the regular file at path to read it, or fails with
// errNotRegular for anything else: it follows no link and does not wait for
// a FIFO's writer.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	} else if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// otherVersion reports whether b starts with a whole header record of a
// side journal in another format than this skein's.
func otherVersion(b []byte) bool {
	payload, _, ok := nextRecord(b)
	return ok && bytes.HasPrefix(payload, []byte("skein-side-journal ")) &&
		!bytes.HasPrefix(payload, []byte(sideMagic)) && !bytes.HasPrefix(payload, []byte(sideMagic2)) && !bytes.HasPrefix(payload, []byte(sideMagic1))
}

// fold writes a dead run's side journal writes into the database.
func (s *Store) fold(run string, writes []write) error {
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil) // immediate: one folder at a time
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int64
	if err := tx.QueryRow(`SELECT n FROM runs WHERE id = ?`, run).Scan(&n); errors.Is(err, sql.ErrNoRows) {
		return nil // the run was deleted: nothing to fold into
	} else if err != nil {
		return err
	}
	lo, hi := effectIDs(n)
	for _, w := range merge(writes) {
		id := w.args[0]
		if !w.ins {
			id = w.args[len(w.args)-1]
		}
		if id := id.(int64); id <= lo || id >= hi || (w.ins && w.args[1].(int64) != n) {
			continue // not this run's: never written so (a damaged file)
		}
		q := foldEnd
		switch {
		case w.ins && w.fin:
			q = foldWhole
		case w.ins:
			q = foldIns
		}
		if _, err := tx.Exec(q, w.args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// The statements of a fold: idempotent versions of the journal's own.
const (
	foldIns   = `INSERT OR IGNORE INTO effects (id, run, path, step, kind, visit, attempt, on_exit, status, started, rendered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)`
	foldEnd   = `UPDATE effects SET status = ?, done = ?, code = ?, error = ?, output = ?, exit_code = ?, stdout = ?, stderr = ?, truncated = ?, ended = ?, model = ?, answer = ?, prompt_tokens = ?, completion_tokens = ?, usage = ? WHERE id = ?`
	foldWhole = insWholeSQL
)
