// Package telemetry turns a run's events into OpenTelemetry traces and
// exports them over OTLP: a span per run, per step attempt, per loop
// iteration and map item, per model call (following the GenAI semantic
// conventions), per tool call and per child flow (docs/observability.md).
//
// It is configured only from the standard environment
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER...),
// read by the SDK itself. When nothing is configured there is no
// [Provider]: nothing is exported, no goroutine is started and a run's
// events cost nothing more.
//
// It reads [vm.Event]s, wherever they come from (the local VM, a
// Temporal workflow's event stream), so one flow gives one trace shape on
// every engine; on the local engine it also sits in the run's stack of
// effect producers ([Run.Effects]) to hand a task's process its
// TRACEPARENT. It knows no terminal and no flag.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinlang/skein/internal/secrets"
)

// Provider exports the spans of runs. A nil *Provider is valid: it
// exports nothing and its runs are nil.
type Provider struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	// m records run and step durations and tokens; nil when the
	// environment asks for no metrics.
	m *meters
	// content: prompts, completions and tool arguments are recorded
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
	content bool
	// secrets masks the values of the environment's secrets (keys,
	// tokens, passwords) in every attribute; a run's own secrets are
	// masked in its events before they get here.
	secrets *secrets.Masker
}

// Configured reports whether the environment asks for traces: an OTLP
// endpoint is set, and neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER
// says otherwise.
func Configured() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")) {
	case "", "otlp":
	default:
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// FromEnv returns a provider configured from the environment, or nil
// (and no error) when the environment asks for no traces (see
// [Configured]). The exporter, the sampler, the batching and the
// resource are read from the standard variables by the SDK.
//
// Metrics are exported beside the traces when [MetricsConfigured]; with
// metrics and no traces, spans are not recorded (never sampled).
func FromEnv(ctx context.Context) (*Provider, error) {
	traces, metrics := Configured(), MetricsConfigured()
	if !traces && !metrics {
		return nil, nil
	}
	var opts []sdktrace.TracerProviderOption
	if traces {
		for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
			if e := os.Getenv(name); e != "" {
				if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return nil, fmt.Errorf("%s=%s: not an http:// or https:// URL", name, e)
				}
			}
		}
		exp, err := exporter(ctx)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	} else {
		opts = append(opts, sdktrace.WithSampler(sdktrace.NeverSample()))
	}
	var reader sdkmetric.Reader
	if metrics {
		var err error
		if reader, err = metricsReader(ctx); err != nil {
			return nil, err
		}
	}
	return newProvider(ctx, reader, opts...)
}

// New returns a provider exporting with the SDK options opts (a test's
// exporter or span processor), its resource and sampler read from the
// environment.
func New(ctx context.Context, opts ...sdktrace.TracerProviderOption) (*Provider, error) {
	return newProvider(ctx, nil, opts...)
}

// newProvider is [New] recording metrics with reader (nil: none).
func newProvider(ctx context.Context, reader sdkmetric.Reader, opts ...sdktrace.TracerProviderOption) (*Provider, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "skein")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	opts = append([]sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithIDGenerator(ids{})}, opts...)
	tp := sdktrace.NewTracerProvider(opts...)
	p := &Provider{tp: tp, tracer: tp.Tracer("github.com/skeinlang/skein"),
		content: strings.EqualFold(os.Getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true"),
		secrets: secretsOf(os.Environ())}
	if reader != nil {
		if p.m, err = newMeters(res, reader); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Shutdown exports the spans not exported yet and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	err := p.tp.Shutdown(ctx)
	if p.m != nil {
		err = errors.Join(err, p.m.mp.Shutdown(ctx))
	}
	return err
}

// Flush exports the spans ended so far.
func (p *Provider) Flush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	err := p.tp.ForceFlush(ctx)
	if p.m != nil {
		err = errors.Join(err, p.m.mp.ForceFlush(ctx))
	}
	return err
}

var (
	defaultOnce sync.Once
	defaultP    *Provider
	defaultErr  error
)

// Default is the process's provider from the environment ([FromEnv]),
// made on first use: the one every run service of the process shares, so
// that a front end flushes it once, on exit ([Shutdown]).
func Default() (*Provider, error) {
	defaultOnce.Do(func() { defaultP, defaultErr = FromEnv(context.Background()) })
	return defaultP, defaultErr
}

// Shutdown shuts down the process's provider if [Default] made one:
// what a front end calls as it exits (and after an interrupt), so that
// the spans of its runs are exported. It also says why the environment's
// configuration could not be used, if it could not.
func Shutdown(ctx context.Context) error {
	defaultOnce.Do(func() {}) // none made from now on
	if defaultErr != nil {
		return fmt.Errorf("not exported: %v", defaultErr)
	}
	return defaultP.Shutdown(ctx)
}

// secretName matches the names of variables whose values are secrets.
var secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|HEADERS)`)

// secretsOf returns a masker of the values of env's secret variables
// (values of 6 bytes or more: the names are a guess, and a shorter value
// of, say, AUTH is more likely a word than a key), the VM's masker.
func secretsOf(env []string) *secrets.Masker {
	m := new(secrets.Masker)
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || len(v) < 6 || !secretName.MatchString(k) {
			continue
		}
		m.Add(v)
	}
	return m
}

// mask returns s with the environment's secrets masked.
func (p *Provider) mask(s string) string { return p.secrets.Mask(s) }

// Tracer returns the provider's tracer of the instrumentation scope
// name (Temporal's interceptor's), whose spans are exported with the
// runs'.
func (p *Provider) Tracer(name string) trace.Tracer { return p.tp.Tracer(name) }

// Parent returns the span context that the W3C traceparent and
// tracestate headers of a request carry (invalid when they carry none):
// the caller's span a run it starts continues.
func Parent(h http.Header) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h))
	return trace.SpanContextFromContext(ctx)
}

// Remote starts a span named name under the span a W3C traceparent names
// (made by another process: a Temporal worker's task under its attempt's
// span, which the machine that started the run makes), and returns the
// func that ends it, failed with the message when it is not "". With no
// provider, or no valid traceparent, it starts nothing.
//
// A span in ctx (Temporal's own span of the activity that runs the task,
// when its OpenTelemetry interceptor is on) is linked to.
func (p *Provider) Remote(ctx context.Context, traceparent, name string, attrs ...attribute.KeyValue) func(failed string) {
	if p == nil || traceparent == "" {
		return func(string) {}
	}
	parent := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	if !trace.SpanContextFromContext(parent).IsValid() {
		return func(string) {}
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs...)}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("skein.link", "temporal_activity")}}))
	}
	_, span := p.tracer.Start(parent, name, opts...)
	return func(failed string) {
		if failed != "" {
			span.SetStatus(codes.Error, p.mask(failed))
		}
		span.End()
	}
}
