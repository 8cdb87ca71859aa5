// Package agent holds the backends that produce a turn's reply. A backend receives the
// turn (the current message's text and the prior turns, already rendered by the caller)
// and streams its reply through a callback, chunk by chunk, append-only.
//
// Backends, all implementing [Agent]:
//
//   - [Echo]: the embedded default, "echo: <text>" one word per chunk.
//   - [OpenAI]: any OpenAI-compatible Chat Completions endpoint, streamed (server-sent
//     events up to "data: [DONE]").
//   - [Anthropic]: the Anthropic Messages API, streamed (message_start ... message_stop).
//   - [Exec]: a command run through `sh -c` once per turn, the turn on its stdin (text or
//     JSON), its stdout streamed as the reply, killed with its process group at the
//     timeout.
//   - [A2ARelay]: each turn relayed to an upstream A2A agent over the a2a client, one
//     upstream contextId per conversation (the gateway keeps it in the ledger).
//
// A reply that begins with [InputRequiredMarker] ends the task INPUT_REQUIRED; the marker
// is removed. OpenAI, Anthropic and Exec apply it themselves; [WithInputMarker] adds it to
// any other backend.
//
// Every failure of a real backend returns an error wrapping [ErrBackend] whose text is
// short and safe to show a peer (the backend, the HTTP status or exit status, the failure
// class); the detail (upstream status and body excerpt, stderr) is logged at Warn by the
// backend, never returned. A failure the peer could act on (a rate limit or an overloaded
// upstream: send again later; the time limit; a request too large for the model; a
// conversation that cannot be sent) is marked with its [Cause], which [CauseOf] reads:
// the gateway says it in the failed task's status. API keys are never logged. The caller's cancellation returns
// ctx's error, and an error from the caller's [Emit] is returned as it is. OpenAI and
// Anthropic first send a request the upstream refused for a passing reason (429, 5xx,
// ...) or that could not be sent again, at most twice, after the wait the answer names
// or a short backoff (http.go, "Retries"); nothing of the reply is read before that.
//
// # Imports
//
// a2a (the protocol model) and a2a/client (the outbound client of the A2A relay),
// projection (the provider-neutral request, pure), internal/sse (the one SSE reader, for
// the chat backends' streams), internal/netx (the one direct-dial rule of their default
// HTTP client) and the standard library; no adapter.
//
// # Caveats
//
// Exec needs a Unix system: it relies on process groups (Setpgid, kill(-pgid)). When the
// command exits, whatever remains of its process group is killed too; output still held
// open after the command exited is waited for at most 2s.
//
// The HTTP backends send the projection's mapping of the turn's request
// (projection.Request.OpenAI and .Anthropic) byte for byte, except that OpenAI puts
// max_tokens in front when one is configured. A request the mapping refuses (a tool call
// without its result) is never sent. A turn without a request (no messages) is sent as
// its prompt, one untrusted user message.
package agent
