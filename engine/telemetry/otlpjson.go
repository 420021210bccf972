//go:build !otlp

package telemetry

// This file is the exporter of the default build: OTLP over HTTP in its
// JSON encoding, which every OTLP receiver takes beside protobuf. The
// SDK's own OTLP exporters bring protobuf and gRPC with them (some 17 MB
// of binary); a build with -tags otlp uses them instead (otlp.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func exporter(context.Context) (sdktrace.SpanExporter, error) {
	switch proto := envOr("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); proto {
	case "", "http/json", "http/protobuf":
	case "grpc":
		return nil, errors.New("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this skein exports over HTTP only (build it with -tags otlp for gRPC)")
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: not a protocol skein exports with (http/json or http/protobuf)", proto)
	}
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = strings.TrimSuffix(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/traces"
	}
	client, headers := otlpHTTP("TRACES")
	return &jsonExporter{url: endpoint, client: client, headers: headers}, nil
}

// otlpHTTP is the client and headers an OTLP/HTTP exporter of one signal
// (TRACES or METRICS) posts with: OTEL_EXPORTER_OTLP_HEADERS, then the
// signal's own headers over them; the signal's timeout, else the general
// one, in milliseconds (10 s when neither is set).
func otlpHTTP(signal string) (*http.Client, http.Header) {
	client := &http.Client{Timeout: 10 * time.Second}
	headers := http.Header{}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_" + signal + "_HEADERS"} {
		for _, kv := range strings.Split(os.Getenv(name), ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			k, _ = url.PathUnescape(strings.TrimSpace(k))
			v, _ = url.PathUnescape(strings.TrimSpace(v))
			headers.Set(k, v)
		}
	}
	if ms := envOr("OTEL_EXPORTER_OTLP_"+signal+"_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"); ms != "" {
		if n, err := strconv.Atoi(ms); err == nil && n > 0 {
			client.Timeout = time.Duration(n) * time.Millisecond
		}
	}
	return client, headers
}

func envOr(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// jsonExporter posts spans to an OTLP/HTTP endpoint as JSON.
type jsonExporter struct {
	url     string
	client  *http.Client
	headers http.Header
}

// ExportSpans implements [sdktrace.SpanExporter].
func (e *jsonExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(encodeSpans(spans))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("OTLP export: %v", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("OTLP export: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Shutdown implements [sdktrace.SpanExporter].
func (e *jsonExporter) Shutdown(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

// The OTLP JSON encoding (ids in hex, 64-bit integers as strings).
type (
	jsonRequest struct {
		ResourceSpans []jsonResourceSpans `json:"resourceSpans"`
	}
	jsonResourceSpans struct {
		Resource   jsonResource     `json:"resource"`
		ScopeSpans []jsonScopeSpans `json:"scopeSpans"`
	}
	jsonScopeSpans struct {
		Scope jsonScope  `json:"scope"`
		Spans []jsonSpan `json:"spans"`
	}
	jsonSpan struct {
		TraceID      string      `json:"traceId"`
		SpanID       string      `json:"spanId"`
		TraceState   string      `json:"traceState,omitempty"`
		ParentSpanID string      `json:"parentSpanId,omitempty"`
		Flags        uint32      `json:"flags,omitempty"`
		Name         string      `json:"name"`
		Kind         int         `json:"kind"`
		Start        string      `json:"startTimeUnixNano"`
		End          string      `json:"endTimeUnixNano"`
		Attributes   []jsonKV    `json:"attributes,omitempty"`
		Events       []jsonEvent `json:"events,omitempty"`
		Links        []jsonLink  `json:"links,omitempty"`
		Status       jsonStatus  `json:"status"`
	}
	jsonEvent struct {
		Time       string   `json:"timeUnixNano"`
		Name       string   `json:"name"`
		Attributes []jsonKV `json:"attributes,omitempty"`
	}
	jsonLink struct {
		TraceID    string   `json:"traceId"`
		SpanID     string   `json:"spanId"`
		Attributes []jsonKV `json:"attributes,omitempty"`
	}
	jsonStatus struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
)

// encodeSpans groups spans by resource and scope, as OTLP does.
func encodeSpans(spans []sdktrace.ReadOnlySpan) *jsonRequest {
	req := &jsonRequest{}
	resources := map[string]int{} // a resource's index in req
	scopes := map[[2]string]int{} // a resource's scope's index in its list
	for _, s := range spans {
		res := s.Resource().Encoded(attribute.DefaultEncoder())
		ri, ok := resources[res]
		if !ok {
			ri = len(req.ResourceSpans)
			resources[res] = ri
			req.ResourceSpans = append(req.ResourceSpans, jsonResourceSpans{Resource: jsonResource{Attributes: kvs(s.Resource().Attributes())}})
		}
		rs := &req.ResourceSpans[ri]
		scope := s.InstrumentationScope()
		si, ok := scopes[[2]string{res, scope.Name}]
		if !ok {
			si = len(rs.ScopeSpans)
			scopes[[2]string{res, scope.Name}] = si
			rs.ScopeSpans = append(rs.ScopeSpans, jsonScopeSpans{Scope: jsonScope{Name: scope.Name, Version: scope.Version}})
		}
		rs.ScopeSpans[si].Spans = append(rs.ScopeSpans[si].Spans, encodeSpan(s))
	}
	return req
}

func encodeSpan(s sdktrace.ReadOnlySpan) jsonSpan {
	sc := s.SpanContext()
	js := jsonSpan{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(),
		TraceState: sc.TraceState().String(), Flags: uint32(sc.TraceFlags()), Name: s.Name(), Kind: int(s.SpanKind()),
		Start: nanos(s.StartTime()), End: nanos(s.EndTime()), Attributes: kvs(s.Attributes())}
	if p := s.Parent(); p.SpanID().IsValid() {
		js.ParentSpanID = p.SpanID().String()
	}
	for _, ev := range s.Events() {
		js.Events = append(js.Events, jsonEvent{Time: nanos(ev.Time), Name: ev.Name, Attributes: kvs(ev.Attributes)})
	}
	for _, l := range s.Links() {
		js.Links = append(js.Links, jsonLink{TraceID: l.SpanContext.TraceID().String(),
			SpanID: l.SpanContext.SpanID().String(), Attributes: kvs(l.Attributes)})
	}
	// OTLP numbers the codes otherwise than the API: unset 0, ok 1, error 2.
	switch s.Status().Code {
	case codes.Ok:
		js.Status.Code = 1
	case codes.Error:
		js.Status = jsonStatus{Code: 2, Message: s.Status().Description}
	}
	return js
}
