// Package otlpwire is an OpenTelemetry SDK span exporter (sdktrace.SpanExporter) that
// posts OTLP/HTTP protobuf: each batch is written straight into an
// ExportTraceServiceRequest in the protobuf wire format (protowire) in a buffer kept
// between exports, instead of through the generated OTLP structs and proto.Marshal as
// the SDK's otlptracehttp does (about 7 allocations per span and 3 per attribute; issue
// #37). The request is the one otlptracehttp sends: spans grouped by resource and
// instrumentation scope, every field and flag as its conversion sets them (a link's
// trace_state is not sent, as there). The tests check it against otlptracehttp's.
//
// Posting follows otlptracehttp: 429, 502, 503 and 504 are retried with exponential
// backoff (5 s, ×1.5, up to 30 s, ±50%), honouring Retry-After, within the timeout of
// one export; another non-2xx is an [*HTTPError]; a 2xx whose partial_success rejects
// spans is a [*PartialSuccessError]. TLS is the default client's (system roots): client
// certificates and custom CAs are otlptracehttp's business (internal/telemetry chooses).
//
// # Imports
//
// The SDK (sdk/trace, sdk/resource, sdk/instrumentation), the API's attribute, codes
// and trace, and protowire; only internal/telemetry imports it (internal/depcheck).
//
// # Caveats
//
// The exporter holds no spans between calls: Shutdown has nothing to flush. Concurrent
// ExportSpans are safe (the SDK's processors call it from one goroutine at a time);
// each concurrent one encodes into buffers of its own.
package otlpwire
