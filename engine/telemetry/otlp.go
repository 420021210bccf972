//go:build otlp

package telemetry

// This file is the exporter of a build with -tags otlp: the SDK's own
// OTLP exporters, over HTTP (protobuf) or gRPC as the protocol variables
// say. The default build exports OTLP/HTTP as JSON (otlpjson.go), without
// the protobuf and gRPC libraries these bring.

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func exporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	}
	return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: not a protocol skein exports with (http/protobuf or grpc)", proto)
}
