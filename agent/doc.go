// Package agent holds the backends that produce a turn's reply. A backend receives the
// turn (the current message's text and the prior turns, already rendered by the caller)
// and streams its reply through a callback, chunk by chunk, append-only.
//
// Backends: echo (the embedded default). Real backends (openai, anthropic, exec, a2a
// relay) implement the same [Agent] interface.
//
// # Imports
//
// projection (the provider-neutral request, pure) and the standard library; no adapter.
package agent
