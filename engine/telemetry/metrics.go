package telemetry

// This file is the metrics beside the traces: run and step durations,
// model call durations and tokens, recorded from the same events as the
// spans with the official metric SDK and posted over OTLP/HTTP as JSON
// (metricsjson.go; with -tags otlp by the SDK's own exporters, otlp.go)
// every OTEL_METRIC_EXPORT_INTERVAL (60 s) and as the process exits.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/skeinlang/skein/vm"
)

// MetricsConfigured reports whether the environment asks for metrics:
// an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT), and neither OTEL_SDK_DISABLED
// nor OTEL_METRICS_EXPORTER says otherwise.
func MetricsConfigured() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER")) {
	case "", "otlp":
	default:
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// meters are the instruments a provider records runs with.
type meters struct {
	mp        *sdkmetric.MeterProvider
	run       metric.Float64Histogram // skein.run.duration
	step      metric.Float64Histogram // skein.step.duration
	modelTime metric.Float64Histogram // gen_ai.client.operation.duration
	tokens    metric.Int64Histogram   // gen_ai.client.token.usage
}

// newMeters returns the instruments of a meter provider reading with r.
func newMeters(res *resource.Resource, r sdkmetric.Reader) (*meters, error) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(r))
	m := mp.Meter("github.com/skeinlang/skein")
	ms := &meters{mp: mp}
	var err error
	if ms.run, err = m.Float64Histogram("skein.run.duration", metric.WithUnit("s"),
		metric.WithDescription("How long runs took, by flow, status and engine")); err != nil {
		return nil, err
	}
	if ms.step, err = m.Float64Histogram("skein.step.duration", metric.WithUnit("s"),
		metric.WithDescription("How long step visits took, by flow, step, kind and status")); err != nil {
		return nil, err
	}
	if ms.modelTime, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("How long model calls took")); err != nil {
		return nil, err
	}
	if ms.tokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("The tokens model calls spent, by type (input, output)")); err != nil {
		return nil, err
	}
	return ms, nil
}

// record records what event ev of a run of flow on engine measures.
func (ms *meters) record(ev *vm.Event, flow, engine string) {
	ctx := context.Background()
	switch ev.Type {
	case vm.RunFinished:
		if len(ev.Flow) > 0 {
			return // a child flow's run: its step's duration counts it
		}
		ms.run.Record(ctx, ev.Duration.Seconds(), metric.WithAttributes(attribute.String("skein.flow", flow),
			attribute.String("skein.run.status", ev.Status), attribute.String("skein.engine", engine)))
	case vm.StepFinished:
		if ev.Replayed {
			return // measured by the run that ran it
		}
		ms.step.Record(ctx, ev.Duration.Seconds(), metric.WithAttributes(attribute.String("skein.flow", flow),
			attribute.String("skein.step.name", ev.Step), attribute.String("skein.step.kind", ev.Kind),
			attribute.String("skein.step.status", ev.Status)))
	case vm.ModelCall:
		attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", ev.Model)}
		if provider, _, ok := strings.Cut(ev.Model, "/"); ok {
			attrs = append(attrs, attribute.String("gen_ai.provider.name", provider))
		}
		ms.modelTime.Record(ctx, ev.Duration.Seconds(), metric.WithAttributes(attrs...))
		ms.tokens.Record(ctx, int64(ev.Usage.PromptTokens), metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "input"))...))
		ms.tokens.Record(ctx, int64(ev.Usage.CompletionTokens), metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "output"))...))
	}
}

// metricsReader returns the periodic reader exporting to the
// environment's OTLP metrics endpoint: as JSON over HTTP, or in a build
// with -tags otlp with the SDK's own exporters (metricsExporter).
func metricsReader(ctx context.Context) (sdkmetric.Reader, error) {
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	if endpoint == "" {
		endpoint = strings.TrimSuffix(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/metrics"
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT=%s: not an http:// or https:// URL", endpoint)
	}
	e, err := metricsExporter(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	// The interval and timeout: OTEL_METRIC_EXPORT_INTERVAL and
	// OTEL_METRIC_EXPORT_TIMEOUT, read by the SDK.
	return sdkmetric.NewPeriodicReader(e), nil
}
