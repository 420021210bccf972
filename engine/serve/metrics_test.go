package serve

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/skeinlang/skein/vm"
	vmmodel "github.com/skeinlang/skein/vm/model"
)

// TestMetricsText: what /metrics writes is Prometheus' text format as
// Prometheus' own parser reads it: label values with quotes, backslashes
// and newlines escaped, a histogram's buckets cumulative up to +Inf, its
// sum and count, and the series in a stable order.
func TestMetricsText(t *testing.T) {
	m := (&Server{}).newMetrics()
	step := func(kind, status string, d time.Duration, replayed bool) {
		m.observe(&vm.Event{Type: vm.StepFinished, Kind: kind, Status: status, Duration: d, Replayed: replayed})
	}
	step("shell", "succeeded", 5*time.Millisecond, false)
	step("shell", "succeeded", 100*time.Millisecond, false) // on a bound: counted in it
	step("shell", "succeeded", 2*time.Hour, false)          // above every bound: only +Inf
	step("shell", "succeeded", time.Second, true)           // replayed: not counted
	step("task", "failed", 3*time.Second, false)
	odd := "a \"quoted\" \\ model\nname"
	m.observe(&vm.Event{Type: vm.ModelCall, Model: odd, Usage: vmmodel.Usage{PromptTokens: 12, CompletionTokens: 30}})
	m.observe(&vm.Event{Type: vm.ModelCall, Model: odd, Usage: vmmodel.Usage{PromptTokens: 3, CompletionTokens: 4}})
	m.observe(&vm.Event{Type: vm.RunFinished, Status: "succeeded"})
	m.observe(&vm.Event{Type: vm.RunFinished, Status: "succeeded", Flow: []string{"child"}}) // a child's end: not a run's
	m.observe(&vm.Event{Type: vm.RunFinished, Status: "failed"})

	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	m.write(w, map[string]int{"succeeded": 2, "running": 1}, map[[2]string]int{{"nightly", "queued"}: 3})
	w.Flush()
	text := b.String()

	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus' parser: %v\n%s", err, text)
	}
	for name, typ := range map[string]string{
		"skein_runs": "GAUGE", "skein_queue_items": "GAUGE", "skein_runs_finished_total": "COUNTER",
		"skein_step_duration_seconds": "HISTOGRAM", "skein_model_tokens_total": "COUNTER",
	} {
		if f := fams[name]; f == nil || f.GetType().String() != typ {
			t.Errorf("%s: %v, want a %s", name, f, typ)
		}
	}
	// The model's name comes back as it was.
	var tokens []string
	for _, s := range fams["skein_model_tokens_total"].GetMetric() {
		var model, dir string
		for _, l := range s.GetLabel() {
			switch l.GetName() {
			case "model":
				model = l.GetValue()
			case "direction":
				dir = l.GetValue()
			}
		}
		if model != odd {
			t.Errorf("model label %q, want %q", model, odd)
		}
		tokens = append(tokens, dir+"="+formatFloat(s.GetCounter().GetValue()))
	}
	if got := strings.Join(tokens, " "); got != "completion=34 prompt=15" {
		t.Errorf("tokens: %s", got)
	}
	var shell string
	for _, s := range fams["skein_step_duration_seconds"].GetMetric() {
		if s.GetLabel()[0].GetValue() != "shell" {
			continue
		}
		h := s.GetHistogram()
		var bs []string
		for _, bk := range h.GetBucket() {
			bs = append(bs, formatFloat(bk.GetUpperBound())+":"+formatFloat(float64(bk.GetCumulativeCount())))
		}
		shell = strings.Join(bs, " ") + " count=" + formatFloat(float64(h.GetSampleCount())) + " sum=" + formatFloat(h.GetSampleSum())
	}
	if want := "0.01:1 0.1:2 0.5:2 1:2 5:2 15:2 60:2 300:2 1800:2 3600:2 +Inf:3 count=3 sum=7200.105"; shell != want {
		t.Errorf("shell steps:\n got %s\nwant %s", shell, want)
	}
	for _, line := range []string{
		`skein_runs{status="running"} 1`,
		`skein_runs{status="succeeded"} 2`,
		`skein_queue_items{flow="nightly",state="queued"} 3`,
		`skein_runs_finished_total{status="failed"} 1`,
		`skein_runs_finished_total{status="succeeded"} 1`,
		`skein_step_duration_seconds_count{kind="task",status="failed"} 1`,
		`skein_model_tokens_total{model="a \"quoted\" \\ model\nname",direction="prompt"} 15`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("lacks %s:\n%s", line, text)
		}
	}
	// Two scrapes of the same counts write the same text.
	var again bytes.Buffer
	w = bufio.NewWriter(&again)
	m.write(w, map[string]int{"running": 1, "succeeded": 2}, map[[2]string]int{{"nightly", "queued"}: 3})
	w.Flush()
	if again.String() != text {
		t.Errorf("a second scrape differs:\n%s\n---\n%s", again.String(), text)
	}
}
