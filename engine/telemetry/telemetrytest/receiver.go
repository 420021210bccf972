// Package telemetrytest is an OTLP/HTTP trace and metrics receiver for
// tests: what a run exports is read back as spans and metrics, in either
// encoding (skein's default build posts OTLP JSON, a -tags otlp build
// protobuf spans).
package telemetrytest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Receiver is an OTLP/HTTP receiver in the test's process, at URL: it
// keeps the spans and metrics posted to it and the headers of the last
// post of spans.
type Receiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []*metricspb.Metric
	headers http.Header
	// encodings: the Content-Type of each post of metrics.
	encodings []string
}

// NewReceiver starts a receiver, closed when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	rc := &Receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/metrics" {
			rc.metricsPost(t, w, r)
			return
		}
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") == "application/json" {
			body = hexIDs(t, body)
		}
		var req coltrace.ExportTraceServiceRequest
		if !decode(t, w, r, body, &req, "receiver") {
			return
		}
		rc.mu.Lock()
		rc.headers = r.Header.Clone()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// Spans is a copy of the spans received so far.
func (rc *Receiver) Spans() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans)
}

// metricsPost takes a post of metrics, in either encoding.
func (rc *Receiver) metricsPost(t testing.TB, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req colmetrics.ExportMetricsServiceRequest
	if !decode(t, w, r, body, &req, "receiver: metrics") {
		return
	}
	rc.mu.Lock()
	rc.encodings = append(rc.encodings, r.Header.Get("Content-Type"))
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			rc.metrics = append(rc.metrics, sm.Metrics...)
		}
	}
	rc.mu.Unlock()
	reply(w, r)
}

// decode reads an OTLP export request in the encoding its Content-Type
// names (JSON, else protobuf); a body that does not decode fails the test
// and is answered 400.
func decode(t testing.TB, w http.ResponseWriter, r *http.Request, body []byte, req proto.Message, what string) bool {
	var err error
	if r.Header.Get("Content-Type") == "application/json" {
		err = protojson.Unmarshal(body, req)
	} else {
		err = proto.Unmarshal(body, req)
	}
	if err != nil {
		t.Errorf("%s: %v", what, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// reply answers an export with an empty response, in the request's
// encoding.
func reply(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
	if r.Header.Get("Content-Type") == "application/json" {
		w.Write([]byte("{}"))
	}
}

// MetricsEncodings are the Content-Types of the posts of metrics so far
// ("application/json", "application/x-protobuf").
func (rc *Receiver) MetricsEncodings() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.encodings)
}

// Metrics is a copy of the metrics received so far, each post's in
// turn (a cumulative metric posted twice is there twice).
func (rc *Receiver) Metrics() []*metricspb.Metric {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.metrics)
}

// Headers are the headers of the last post.
func (rc *Receiver) Headers() http.Header {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.headers
}

// hexIDs rewrites the ids of OTLP JSON, which are hex, in the base64
// that protojson reads bytes in.
func hexIDs(t testing.TB, body []byte) []byte {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Errorf("receiver: %v", err)
		return body
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
					b, err := hex.DecodeString(s)
					if err != nil {
						t.Errorf("receiver: %s %q is not hex", k, s)
					}
					x[k] = base64.StdEncoding.EncodeToString(b)
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	out, _ := json.Marshal(v)
	return out
}
