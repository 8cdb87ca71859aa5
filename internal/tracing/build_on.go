//go:build !gateway_notrace

package tracing

// CompiledIn is false only in a build with the gateway_notrace tag: the build "without
// tracing" that make bench measures tracing's cost against.
const CompiledIn = true
