package serve

// This file is GET /metrics: Prometheus text metrics of the store's runs
// and queue, and of the steps and model calls of the runs this server
// runs. The text format (version 0.0.4) is written here: five metrics
// did not need prometheus/client_golang, which linked protobuf, expvar
// and a process collector into every skein.

import (
	"bufio"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/skeinlang/skein/vm"
)

// stepBuckets are the upper bounds, in seconds, of
// skein_step_duration_seconds' buckets.
var stepBuckets = []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, 3600}

// metrics are the server's counters and histogram, counted from its
// start; the gauges are read from the store at each scrape.
type metrics struct {
	mu     sync.Mutex
	steps  map[[2]string]*histogram // by kind, status
	tokens map[[2]string]float64    // by model, direction
	ended  map[string]float64       // by status
}

// histogram is one series of a histogram: counts[i] is how many
// observations fell at or below bounds[i] and above bounds[i-1].
type histogram struct {
	counts []uint64
	count  uint64
	sum    float64
}

func (s *Server) newMetrics() *metrics {
	return &metrics{
		steps:  map[[2]string]*histogram{},
		tokens: map[[2]string]float64{},
		ended:  map[string]float64{},
	}
}

// observe counts what event ev of a run this server runs says.
func (m *metrics) observe(ev *vm.Event) {
	switch ev.Type {
	case vm.StepFinished:
		if !ev.Replayed {
			m.mu.Lock()
			m.observeStep(ev.Kind, ev.Status, ev.Duration.Seconds())
			m.mu.Unlock()
		}
	case vm.ModelCall:
		m.mu.Lock()
		m.tokens[[2]string{ev.Model, "prompt"}] += float64(ev.Usage.PromptTokens)
		m.tokens[[2]string{ev.Model, "completion"}] += float64(ev.Usage.CompletionTokens)
		m.mu.Unlock()
	case vm.RunFinished:
		if len(ev.Flow) == 0 {
			m.mu.Lock()
			m.ended[ev.Status]++
			m.mu.Unlock()
		}
	}
}

// observeStep adds a step of that kind and status that took secs.
func (m *metrics) observeStep(kind, status string, secs float64) {
	h := m.steps[[2]string{kind, status}]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(stepBuckets))}
		m.steps[[2]string{kind, status}] = h
	}
	if i, _ := slices.BinarySearch(stepBuckets, secs); i < len(stepBuckets) {
		h.counts[i]++
	}
	h.count++
	h.sum += secs
}

// getMetrics is GET /metrics, in Prometheus' text format. With a token,
// it needs it (Authorization: Bearer TOKEN), as the API does.
func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token != "" {
		if _, right := s.bearer(r); !right {
			fail(w, http.StatusUnauthorized, "unauthorized", "this server needs its token: send Authorization: Bearer TOKEN")
			return
		}
	}
	runs, queue, err := s.cfg.Store.RunCounts()
	if err != nil {
		// As a scrape with a failed collector did: the store's gauges
		// are left out, the server's own counters still count.
		s.logf("metrics: %v", err)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	s.metrics.write(bw, runs, queue)
	bw.Flush()
}

// write writes the metrics in the text format: each metric's HELP and
// TYPE lines, then its series sorted by their label values.
func (m *metrics) write(w *bufio.Writer, runs map[string]int, queue map[[2]string]int) {
	p := promWriter{w}
	p.family("skein_model_tokens_total", "counter", "Model tokens the runs this server ran spent, by model and direction (prompt, completion).")
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range sortedKeys(m.tokens) {
		p.sample("skein_model_tokens_total", m.tokens[k], "model", k[0], "direction", k[1])
	}
	p.family("skein_queue_items", "gauge", "Queue items waiting (queued) or running, by flow.")
	for _, k := range sortedKeys(queue) {
		p.sample("skein_queue_items", float64(queue[k]), "flow", k[0], "state", k[1])
	}
	p.family("skein_runs", "gauge", "Runs in the store, by recorded status.")
	for _, st := range slices.Sorted(maps.Keys(runs)) {
		p.sample("skein_runs", float64(runs[st]), "status", st)
	}
	p.family("skein_runs_finished_total", "counter", "Runs this server ran that ended, by status.")
	for _, st := range slices.Sorted(maps.Keys(m.ended)) {
		p.sample("skein_runs_finished_total", m.ended[st], "status", st)
	}
	p.family("skein_step_duration_seconds", "histogram", "How long the steps of the runs this server ran took, by kind and status (replayed steps not counted).")
	for _, k := range sortedKeys(m.steps) {
		h := m.steps[k]
		var below uint64
		for i, le := range stepBuckets {
			below += h.counts[i]
			p.sample("skein_step_duration_seconds_bucket", float64(below), "kind", k[0], "status", k[1], "le", formatFloat(le))
		}
		p.sample("skein_step_duration_seconds_bucket", float64(h.count), "kind", k[0], "status", k[1], "le", "+Inf")
		p.sample("skein_step_duration_seconds_sum", h.sum, "kind", k[0], "status", k[1])
		p.sample("skein_step_duration_seconds_count", float64(h.count), "kind", k[0], "status", k[1])
	}
}

// promWriter writes lines of Prometheus' text format.
type promWriter struct{ w *bufio.Writer }

// family writes a metric's HELP and TYPE lines.
func (p promWriter) family(name, typ, help string) {
	p.w.WriteString("# HELP " + name + " ")
	p.w.WriteString(helpEscaper.Replace(help))
	p.w.WriteString("\n# TYPE " + name + " " + typ + "\n")
}

// sample writes one series' line: labels are name, value pairs.
func (p promWriter) sample(name string, v float64, labels ...string) {
	p.w.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			p.w.WriteByte('{')
		} else {
			p.w.WriteByte(',')
		}
		p.w.WriteString(labels[i] + `="`)
		p.w.WriteString(labelEscaper.Replace(labels[i+1]))
		p.w.WriteByte('"')
	}
	if len(labels) > 0 {
		p.w.WriteByte('}')
	}
	p.w.WriteByte(' ')
	p.w.WriteString(formatFloat(v))
	p.w.WriteByte('\n')
}

var (
	// A label value escapes backslash, double quote and newline; HELP
	// text escapes backslash and newline.
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// formatFloat writes a sample's value as the text format spells it.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// sortedKeys are m's label pairs in order.
func sortedKeys[V any](m map[[2]string]V) [][2]string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	return keys
}
