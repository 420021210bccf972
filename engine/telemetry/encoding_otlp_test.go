//go:build otlp

package telemetry_test

// metricsEncoding is how a build with -tags otlp posts metrics: the
// SDK's otlpmetrichttp exporter.
const metricsEncoding = "application/x-protobuf"
