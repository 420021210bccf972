package proc

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// chunkReader returns data in reads of random sizes.
type chunkReader struct {
	data []byte
	rnd  *rand.Rand
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), 1+r.rnd.IntN(3000))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// A task's captured output is the last max bytes of what it wrote, and
// truncated exactly when it wrote more, whether it arrives through Write
// (any chunking) or ReadFrom (io.Copy of a pipe), which reads into the
// buffer itself.
func TestTailBufferKeepsTail(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, max := range []int{1, 7, 512, 4096} {
		for _, total := range []int{0, 1, max - 1, max, max + 1, 2 * max, 2*max + 1, 10*max + 3, 70000} {
			if total < 0 {
				continue
			}
			data := make([]byte, total)
			for i := range data {
				data[i] = byte(rnd.IntN(256))
			}
			want, wantTrunc := data, false
			if total > max {
				want, wantTrunc = data[total-max:], true
			}
			check := func(how string, b *tailBuffer) {
				t.Helper()
				if got := b.String(); !bytes.Equal([]byte(got), want) {
					t.Errorf("max %d, %d bytes, %s: kept %d bytes, want the last %d", max, total, how, len(got), len(want))
				}
				if b.truncated != wantTrunc {
					t.Errorf("max %d, %d bytes, %s: truncated %v, want %v", max, total, how, b.truncated, wantTrunc)
				}
			}
			w := &tailBuffer{max: max}
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 1+rnd.IntN(2*max+10))
				w.Write(rest[:n])
				rest = rest[n:]
			}
			check("Write", w)
			r := &tailBuffer{max: max}
			if n, err := io.Copy(r, &chunkReader{data: data, rnd: rnd}); err != nil || n != int64(total) {
				t.Fatalf("io.Copy: %d, %v", n, err)
			}
			check("ReadFrom", r)
			// A tee (the live output of a recorded run) sees every byte,
			// the buffer the tail, and io.Copy goes through ReadFrom.
			teed, all := &tailBuffer{max: max}, &bytes.Buffer{}
			if _, ok := io.Writer(teeWriter{teed, all}).(io.ReaderFrom); !ok {
				t.Fatal("teeWriter is not an io.ReaderFrom: io.Copy gives each stream a 32 KiB buffer")
			}
			if _, err := io.Copy(teeWriter{teed, all}, &chunkReader{data: data, rnd: rnd}); err != nil {
				t.Fatal(err)
			}
			check("ReadFrom with a tee", teed)
			if !bytes.Equal(all.Bytes(), data) {
				t.Errorf("max %d, %d bytes: the tee got %d bytes, want all", max, total, all.Len())
			}
			one := &tailBuffer{max: max}
			one.ReadFrom(iotest.OneByteReader(bytes.NewReader(data)))
			check("ReadFrom one byte at a time", one)
		}
	}
}

// A read error ends ReadFrom with it, keeping what came before.
func TestTailBufferReadError(t *testing.T) {
	b := &tailBuffer{max: 100}
	n, err := b.ReadFrom(io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(io.ErrUnexpectedEOF)))
	if n != 3 || err != io.ErrUnexpectedEOF || b.String() != "abc" {
		t.Fatalf("got %d, %v, %q", n, err, b.String())
	}
}
