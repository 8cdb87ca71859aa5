//go:build gateway_notrace

package tracing

// CompiledIn is false in this build (tag gateway_notrace): no propagation, every tracer
// is the no-op one, so the binary behaves as one without tracing. It exists for make
// bench, which measures tracing's cost against it; nothing ships with it.
const CompiledIn = false
