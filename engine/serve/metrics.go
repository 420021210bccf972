package serve

// This file is GET /metrics: Prometheus text metrics of the store's runs
// and queue, and of the steps and model calls of the runs this server
// runs.

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skeinlang/skein/vm"
)

// metrics are the server's Prometheus metrics.
type metrics struct {
	reg    *prometheus.Registry
	steps  *prometheus.HistogramVec
	tokens *prometheus.CounterVec
	ended  *prometheus.CounterVec
}

func (s *Server) newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.steps = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "skein_step_duration_seconds",
		Help:    "How long the steps of the runs this server ran took, by kind and status (replayed steps not counted).",
		Buckets: []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, 3600},
	}, []string{"kind", "status"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skein_model_tokens_total",
		Help: "Model tokens the runs this server ran spent, by model and direction (prompt, completion).",
	}, []string{"model", "direction"})
	m.ended = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skein_runs_finished_total",
		Help: "Runs this server ran that ended, by status.",
	}, []string{"status"})
	m.reg.MustRegister(m.steps, m.tokens, m.ended, storeCollector{s})
	return m
}

// observe counts what event ev of a run this server runs says.
func (m *metrics) observe(ev *vm.Event) {
	switch ev.Type {
	case vm.StepFinished:
		if !ev.Replayed {
			m.steps.WithLabelValues(ev.Kind, ev.Status).Observe(ev.Duration.Seconds())
		}
	case vm.ModelCall:
		m.tokens.WithLabelValues(ev.Model, "prompt").Add(float64(ev.Usage.PromptTokens))
		m.tokens.WithLabelValues(ev.Model, "completion").Add(float64(ev.Usage.CompletionTokens))
	case vm.RunFinished:
		if len(ev.Flow) == 0 {
			m.ended.WithLabelValues(ev.Status).Inc()
		}
	}
}

// storeCollector reads the runs by status and the queue's depth from the
// store at each scrape.
type storeCollector struct{ s *Server }

var (
	runsDesc  = prometheus.NewDesc("skein_runs", "Runs in the store, by recorded status.", []string{"status"}, nil)
	queueDesc = prometheus.NewDesc("skein_queue_items", "Queue items waiting (queued) or running, by flow.", []string{"flow", "state"}, nil)
)

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- runsDesc; ch <- queueDesc }

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	runs, queue, err := c.s.cfg.Store.RunCounts()
	if err != nil {
		c.s.logf("metrics: %v", err)
		return
	}
	for st, n := range runs {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(n), st)
	}
	for k, n := range queue {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
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
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
