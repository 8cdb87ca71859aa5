// Package a2a is the gateway's protocol layer: one internal model of the Agent2Agent
// protocol, its two JSON-RPC wire dialects (A2A v1.0 and v0.3), the single JSON-RPC error
// table, the SSE framing, the agent card, and a plain [net/http.Handler] that dispatches
// requests to a [Handler].
//
// Both dialects decode into the same internal types ([Message], [Task], [Event] ...);
// responses are encoded in the dialect of the method that was called: v0.3 methods
// (message/send, tasks/get ...) get `kind` discriminators, bare results, kebab-case enums
// and `final`; v1.0 methods (SendMessage, GetTask ...) get oneof wrappers, TASK_STATE_* and
// ROLE_* enums, and no `final`.
//
// [Dispatcher] serves decoded requests frame by frame; the HTTP handler and the WebSocket
// transport (package streaming) both use it, so there is one dispatch path.
//
// # Imports
//
// No project package but internal/logctx (standard library only: the log scope of a
// request); third-party: none beyond the standard library.
//
// # Caveats
//
// Errors returned by a [Handler] reach the wire only through [ToRPCError]: anything that
// is not one of this package's sentinels (or an [*Error] built from one) is answered as
// "internal error" and its detail is logged, never sent.
package a2a
