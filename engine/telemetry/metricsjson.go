//go:build !otlp

package telemetry

// This file is the metrics exporter of the default build: OTLP over HTTP
// in its JSON encoding, without the protobuf and gRPC libraries of the
// SDK's own exporters (a build with -tags otlp uses those: otlp.go); and
// the OTLP JSON encoding of attributes that the default build's span
// exporter shares (otlpjson.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func metricsExporter(_ context.Context, endpoint string) (sdkmetric.Exporter, error) {
	client, headers := otlpHTTP("METRICS")
	return &jsonMetrics{url: endpoint, client: client, headers: headers}, nil
}

// jsonMetrics posts metrics to an OTLP/HTTP endpoint as JSON.
type jsonMetrics struct {
	url     string
	client  *http.Client
	headers http.Header
}

// Temporality implements [sdkmetric.Exporter]: cumulative, as OTLP's
// receivers (and Prometheus behind a collector) expect by default.
func (e *jsonMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

// Aggregation implements [sdkmetric.Exporter].
func (e *jsonMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export implements [sdkmetric.Exporter].
func (e *jsonMetrics) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	req := encodeMetrics(rm)
	if len(req.ResourceMetrics[0].ScopeMetrics) == 0 {
		return nil
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range e.headers {
		r.Header[k] = v
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(r)
	if err != nil {
		return fmt.Errorf("OTLP metrics export: %v", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("OTLP metrics export: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// ForceFlush implements [sdkmetric.Exporter]: nothing is held.
func (e *jsonMetrics) ForceFlush(context.Context) error { return nil }

// Shutdown implements [sdkmetric.Exporter].
func (e *jsonMetrics) Shutdown(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

// The OTLP JSON encoding of metrics (64-bit integers as strings).
type (
	jsonMetricsRequest struct {
		ResourceMetrics []jsonResourceMetrics `json:"resourceMetrics"`
	}
	jsonResourceMetrics struct {
		Resource     jsonResource       `json:"resource"`
		ScopeMetrics []jsonScopeMetrics `json:"scopeMetrics"`
	}
	jsonScopeMetrics struct {
		Scope   jsonScope    `json:"scope"`
		Metrics []jsonMetric `json:"metrics"`
	}
	jsonMetric struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Unit        string         `json:"unit,omitempty"`
		Sum         *jsonSum       `json:"sum,omitempty"`
		Histogram   *jsonHistogram `json:"histogram,omitempty"`
	}
	jsonSum struct {
		DataPoints  []jsonNumberPoint `json:"dataPoints"`
		Temporality int               `json:"aggregationTemporality"`
		Monotonic   bool              `json:"isMonotonic"`
	}
	jsonNumberPoint struct {
		Attributes []jsonKV `json:"attributes,omitempty"`
		Start      string   `json:"startTimeUnixNano"`
		Time       string   `json:"timeUnixNano"`
		AsInt      *string  `json:"asInt,omitempty"`
		AsDouble   *float64 `json:"asDouble,omitempty"`
	}
	jsonHistogram struct {
		DataPoints  []jsonHistogramPoint `json:"dataPoints"`
		Temporality int                  `json:"aggregationTemporality"`
	}
	jsonHistogramPoint struct {
		Attributes   []jsonKV  `json:"attributes,omitempty"`
		Start        string    `json:"startTimeUnixNano"`
		Time         string    `json:"timeUnixNano"`
		Count        string    `json:"count"`
		Sum          float64   `json:"sum"`
		BucketCounts []string  `json:"bucketCounts"`
		Bounds       []float64 `json:"explicitBounds"`
		Min          *float64  `json:"min,omitempty"`
		Max          *float64  `json:"max,omitempty"`
	}
	jsonResource struct {
		Attributes []jsonKV `json:"attributes"`
	}
	jsonScope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	jsonKV struct {
		Key   string    `json:"key"`
		Value jsonValue `json:"value"`
	}
	jsonValue struct {
		String *string    `json:"stringValue,omitempty"`
		Bool   *bool      `json:"boolValue,omitempty"`
		Int    *string    `json:"intValue,omitempty"`
		Double *float64   `json:"doubleValue,omitempty"`
		Array  *jsonArray `json:"arrayValue,omitempty"`
	}
	jsonArray struct {
		Values []jsonValue `json:"values"`
	}
)

// OTLP's AggregationTemporality: delta 1, cumulative 2.
func temporality(t metricdata.Temporality) int {
	if t == metricdata.DeltaTemporality {
		return 1
	}
	return 2
}

func encodeMetrics(rm *metricdata.ResourceMetrics) *jsonMetricsRequest {
	out := jsonResourceMetrics{Resource: jsonResource{Attributes: kvs(rm.Resource.Attributes())}}
	for _, sm := range rm.ScopeMetrics {
		js := jsonScopeMetrics{Scope: jsonScope{Name: sm.Scope.Name, Version: sm.Scope.Version}}
		for _, m := range sm.Metrics {
			jm := jsonMetric{Name: m.Name, Description: m.Description, Unit: m.Unit}
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				jm.Histogram = histogram(d)
			case metricdata.Histogram[int64]:
				jm.Histogram = histogram(d)
			case metricdata.Sum[int64]:
				jm.Sum = sum(d)
			case metricdata.Sum[float64]:
				jm.Sum = sum(d)
			default:
				continue // no other kind is recorded
			}
			js.Metrics = append(js.Metrics, jm)
		}
		if len(js.Metrics) > 0 {
			out.ScopeMetrics = append(out.ScopeMetrics, js)
		}
	}
	return &jsonMetricsRequest{ResourceMetrics: []jsonResourceMetrics{out}}
}

func histogram[N int64 | float64](d metricdata.Histogram[N]) *jsonHistogram {
	h := &jsonHistogram{Temporality: temporality(d.Temporality), DataPoints: []jsonHistogramPoint{}}
	for _, p := range d.DataPoints {
		jp := jsonHistogramPoint{Attributes: kvs(p.Attributes.ToSlice()), Start: nanos(p.StartTime), Time: nanos(p.Time),
			Count: strconv.FormatUint(p.Count, 10), Sum: float64(p.Sum), Bounds: p.Bounds, BucketCounts: make([]string, len(p.BucketCounts))}
		for i, c := range p.BucketCounts {
			jp.BucketCounts[i] = strconv.FormatUint(c, 10)
		}
		if v, ok := p.Min.Value(); ok {
			f := float64(v)
			jp.Min = &f
		}
		if v, ok := p.Max.Value(); ok {
			f := float64(v)
			jp.Max = &f
		}
		h.DataPoints = append(h.DataPoints, jp)
	}
	return h
}

func sum[N int64 | float64](d metricdata.Sum[N]) *jsonSum {
	s := &jsonSum{Temporality: temporality(d.Temporality), Monotonic: d.IsMonotonic, DataPoints: []jsonNumberPoint{}}
	for _, p := range d.DataPoints {
		jp := jsonNumberPoint{Attributes: kvs(p.Attributes.ToSlice()), Start: nanos(p.StartTime), Time: nanos(p.Time)}
		switch v := any(p.Value).(type) {
		case int64:
			n := strconv.FormatInt(v, 10)
			jp.AsInt = &n
		case float64:
			jp.AsDouble = &v
		}
		s.DataPoints = append(s.DataPoints, jp)
	}
	return s
}

func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

func kvs(attrs []attribute.KeyValue) []jsonKV {
	out := make([]jsonKV, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, jsonKV{Key: string(a.Key), Value: value(a.Value)})
	}
	return out
}

func value(v attribute.Value) jsonValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return jsonValue{Bool: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return jsonValue{Int: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return jsonValue{Double: &f}
	case attribute.STRINGSLICE:
		var arr jsonArray
		for _, s := range v.AsStringSlice() {
			arr.Values = append(arr.Values, jsonValue{String: &s})
		}
		return jsonValue{Array: &arr}
	case attribute.INT64SLICE:
		var arr jsonArray
		for _, n := range v.AsInt64Slice() {
			s := strconv.FormatInt(n, 10)
			arr.Values = append(arr.Values, jsonValue{Int: &s})
		}
		return jsonValue{Array: &arr}
	}
	s := v.String()
	return jsonValue{String: &s}
}
