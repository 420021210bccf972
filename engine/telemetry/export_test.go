package telemetry

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// NewMetered is New recording metrics with reader too (the benchmark's).
func NewMetered(ctx context.Context, reader sdkmetric.Reader, opts ...sdktrace.TracerProviderOption) (*Provider, error) {
	return newProvider(ctx, reader, opts...)
}
