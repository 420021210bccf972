package stdlib

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
)

// benchDocs are JSON documents of about 1 MB (256 KB of empty objects,
// which decode to about 45 MiB), of the shapes that cost the most and the
// least memory per byte once decoded.
func benchDocs() []struct{ name, doc string } {
	doc := func(elem string, size int) string {
		n := size / (len(elem) + 1)
		return "[" + strings.Repeat(elem+",", n-1) + elem + "]"
	}
	return []struct{ name, doc string }{
		{"ints", doc("12345", 1<<20)},
		{"strings", doc(`"abcdefgh"`, 1<<20)},
		{"objects", doc(`{"name":"x","n":1,"ok":true}`, 1<<20)},
		{"empty objects", doc("{}", 1<<18)},
		{"mixed", doc(`{"id":123,"tags":["a","b"],"score":1.5,"note":"caf\u00e9"}`, 1<<20)},
	}
}

// BenchmarkJSONDecode decodes the documents with json.decode as it was
// before its size was estimated (before: go.starlark.net's decoder after a
// scan of the nesting) and as it is (after: the estimate's walk, then the
// same decoder): the difference is the cost of the estimate. For after it
// also reports the heap the decoded value keeps (heap/doc) and the
// estimate (estimate/doc), each per byte of the document.
func BenchmarkJSONDecode(b *testing.B) {
	plain := starjson.Module.Members["decode"].(*starlark.Builtin)
	checked := jsonModule.Members["decode"].(*starlark.Builtin)
	for _, d := range benchDocs() {
		for _, mode := range []string{"before", "after"} {
			b.Run(d.name+"/"+mode, func(b *testing.B) {
				arg := starlark.Tuple{starlark.String(d.doc)}
				b.SetBytes(int64(len(d.doc)))
				decode := func() (starlark.Value, error) {
					if mode == "before" {
						if err := depthScan(d.doc, MaxJSONDepth); err != nil {
							return nil, err
						}
						return starlark.Call(&starlark.Thread{}, plain, arg, nil)
					}
					return starlark.Call(&starlark.Thread{}, checked, arg, nil)
				}
				for b.Loop() {
					if _, err := decode(); err != nil {
						b.Fatal(err)
					}
				}
				if mode == "after" {
					kept := keptBy(func() any { v, _ := decode(); return v })
					b.ReportMetric(float64(kept)/float64(len(d.doc)), "heap/doc")
					est, _ := estimateJSON(d.doc, &starlarkCosts)
					b.ReportMetric(float64(est)/float64(len(d.doc)), "estimate/doc")
				}
			})
		}
	}
}

// depthScan is the nesting check json.decode made before the estimate
// replaced it: it counts brackets outside strings.
func depthScan(s string, limit int) error {
	depth, inString := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > limit {
				return fmt.Errorf("JSON nested more than %d deep (at byte %d)", limit, i)
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// BenchmarkFromJSON is BenchmarkJSONDecode for FromJSON (flow data from
// an inputs file, a model's reply): before is the decoder alone
// (FromStoredJSON), after with the estimate.
func BenchmarkFromJSON(b *testing.B) {
	for _, d := range benchDocs() {
		for _, mode := range []string{"before", "after"} {
			b.Run(d.name+"/"+mode, func(b *testing.B) {
				data := []byte(d.doc)
				decode := FromJSON
				if mode == "before" {
					decode = FromStoredJSON
				}
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := decode(data); err != nil {
						b.Fatal(err)
					}
				}
				if mode == "after" {
					kept := keptBy(func() any { v, _ := decode(data); return v })
					b.ReportMetric(float64(kept)/float64(len(data)), "heap/doc")
					est, _ := estimateJSON(data, &flowDataCosts)
					b.ReportMetric(float64(est)/float64(len(data)), "estimate/doc")
				}
			})
		}
	}
}

var kept any

// keptBy returns how much the heap grows by while what f returns is alive.
func keptBy(f func() any) int64 {
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	kept = f()
	after := heap()
	kept = nil
	return after - before
}

// BenchmarkJSONWalk is the estimate's walk alone (walk), and the nesting
// scan it replaced (depth), on the same documents.
func BenchmarkJSONWalk(b *testing.B) {
	for _, d := range benchDocs() {
		b.Run(d.name+"/walk", func(b *testing.B) {
			b.SetBytes(int64(len(d.doc)))
			for b.Loop() {
				estimateJSON(d.doc, &starlarkCosts)
			}
		})
		b.Run(d.name+"/depth", func(b *testing.B) {
			b.SetBytes(int64(len(d.doc)))
			for b.Loop() {
				depthScan(d.doc, MaxJSONDepth)
			}
		})
	}
}
