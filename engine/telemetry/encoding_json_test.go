//go:build !otlp

package telemetry_test

// metricsEncoding is how the default build posts metrics.
const metricsEncoding = "application/json"
