// Package tracing is the gateway's one view of OpenTelemetry tracing through the API
// only (go.opentelemetry.io/otel, never the SDK): the W3C trace-context propagator every
// edge uses to read and write traceparent/tracestate (HTTP headers, a map for the
// WebSocket's per-frame metadata, the environment of an exec agent), a tracer from an
// optional provider (nil traces nothing), the trace and span ids of a context for the
// ledger, and a slog handler that adds trace_id and span_id to a request's log lines.
//
// The provider itself (the SDK, the OTLP/HTTP exporter, the OTEL_* environment) is set up
// by internal/telemetry, in the binary only; every other package is handed a
// trace.TracerProvider and imports this package and the API.
//
// The build tag gateway_notrace compiles propagation and spans out (every function here
// becomes a no-op, internal/telemetry makes no provider): the baseline make bench
// measures tracing's cost against.
//
// # Imports
//
// The standard library and the OpenTelemetry API.
package tracing
