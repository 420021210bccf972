//go:build otlp

package telemetry

// This file is the exporters of a build with -tags otlp: the SDK's own
// OTLP exporters of traces and metrics, over HTTP (protobuf) or gRPC as
// the protocol variables say. The default build exports OTLP/HTTP as JSON (otlpjson.go), without
// the protobuf and gRPC libraries these bring.

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func exporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	proto := otlpProtocol("TRACES")
	switch proto {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	}
	return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: not a protocol skein exports with (http/protobuf or grpc)", proto)
}

// metricsExporter is the SDK's OTLP metrics exporter for the protocol
// OTEL_EXPORTER_OTLP_METRICS_PROTOCOL (else OTEL_EXPORTER_OTLP_PROTOCOL)
// names; it reads the endpoint (checked by metricsReader), headers and
// timeout from the environment itself.
func metricsExporter(ctx context.Context, _ string) (sdkmetric.Exporter, error) {
	proto := otlpProtocol("METRICS")
	switch proto {
	case "", "http/protobuf":
		return otlpmetrichttp.New(ctx)
	case "grpc":
		return otlpmetricgrpc.New(ctx)
	}
	return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: not a protocol skein exports metrics with (http/protobuf or grpc)", proto)
}

// otlpProtocol is the OTLP protocol for signal (TRACES, METRICS):
// OTEL_EXPORTER_OTLP_<signal>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL.
func otlpProtocol(signal string) string {
	if p := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"); p != "" {
		return p
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
}
