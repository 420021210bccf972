package stdlib

import (
	"runtime"
	"strings"
	"testing"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
)

// benchDocs are JSON documents of about 1 MB, of the shapes that cost the
// most and the least memory per byte once decoded.
func benchDocs() []struct{ name, doc string } {
	doc := func(elem string) string {
		n := (1 << 20) / (len(elem) + 1)
		return "[" + strings.Repeat(elem+",", n-1) + elem + "]"
	}
	return []struct{ name, doc string }{
		{"ints", doc("12345")},
		{"strings", doc(`"abcdefgh"`)},
		{"objects", doc(`{"name":"x","n":1,"ok":true}`)},
		{"empty objects", doc("{}")},
		{"mixed", doc(`{"id":123,"tags":["a","b"],"score":1.5,"note":"caf\u00e9"}`)},
	}
}

// BenchmarkJSONDecode decodes 1 MB documents with Skein's json.decode
// (which estimates the decoded size first) and with go.starlark.net's own
// (plain): the difference is the cost of the estimate. It also reports,
// for the checked decoder, the heap the decoded value keeps (heap/doc) and
// the estimate (estimate/doc), each per byte of the document.
func BenchmarkJSONDecode(b *testing.B) {
	plain := starjson.Module.Members["decode"].(*starlark.Builtin)
	checked := jsonModule.Members["decode"].(*starlark.Builtin)
	for _, d := range benchDocs() {
		for _, mode := range []string{"plain", "checked"} {
			fn := plain
			if mode == "checked" {
				fn = checked
			}
			b.Run(d.name+"/"+mode, func(b *testing.B) {
				arg := starlark.Tuple{starlark.String(d.doc)}
				b.SetBytes(int64(len(d.doc)))
				for b.Loop() {
					if _, err := starlark.Call(&starlark.Thread{}, fn, arg, nil); err != nil {
						b.Fatal(err)
					}
				}
				if mode == "checked" {
					kept := keptBy(func() any { v, _ := starlark.Call(&starlark.Thread{}, fn, arg, nil); return v })
					b.ReportMetric(float64(kept)/float64(len(d.doc)), "heap/doc")
					est, _ := estimateJSON(d.doc, &starlarkCosts)
					b.ReportMetric(float64(est)/float64(len(d.doc)), "estimate/doc")
				}
			})
		}
	}
}

// BenchmarkFromJSON is BenchmarkJSONDecode for FromJSON (flow data from
// an inputs file, a model's reply, a fixture).
func BenchmarkFromJSON(b *testing.B) {
	for _, d := range benchDocs() {
		b.Run(d.name, func(b *testing.B) {
			data := []byte(d.doc)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := FromJSON(data); err != nil {
					b.Fatal(err)
				}
			}
			kept := keptBy(func() any { v, _ := FromJSON(data); return v })
			b.ReportMetric(float64(kept)/float64(len(data)), "heap/doc")
			est, _ := estimateJSON(data, &flowDataCosts)
			b.ReportMetric(float64(est)/float64(len(data)), "estimate/doc")
		})
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

// BenchmarkJSONWalk is the estimate alone, on the 1 MB documents.
func BenchmarkJSONWalk(b *testing.B) {
	for _, d := range benchDocs() {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(d.doc)))
			for b.Loop() {
				estimateJSON(d.doc, &starlarkCosts)
			}
		})
	}
}
