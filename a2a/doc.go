// Package a2a is the gateway's protocol layer: one internal model of the Agent2Agent
// protocol, its two JSON-RPC wire dialects (A2A v1.0 and v0.3) in both directions, the
// JSON-RPC envelope, the single JSON-RPC error table, the SSE framing, the agent card, and
// a plain [net/http.Handler] that dispatches requests to a [Handler].
//
// # What lives where
//
// a2a-go splits its SDK into the model (a2a), the server (a2asrv) and the client
// (a2aclient). Here the outbound client is package a2aclient in a2a/client (the HTTP
// exchange, the stream reader, the dialect choice, the transport errors); it imports this
// package and never the reverse. The server side stays in this package, as DESIGN §2 lays
// it out: the JSON-RPC+SSE handler (jsonrpc.go, handler.go) and the [Dispatcher] are thin
// (decode, dispatch to a [Handler], encode) and share the unexported wire types, the method
// table and the error table with the codec, so a separate server package would have to
// export all of them, widening the API the protocol layer promises, for no caller that
// wants the model without the handler. The client side of the codec (encoders of the
// params a client sends, decoders of the results it reads: wire_client.go) stays here for
// the same reason: it is the inverse of the server's codec over the same wire types, and
// the round-trip tests hold the two together. [SentinelFor] is the error table read
// backwards, for a client that maps a JSON-RPC error answer to a sentinel.
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
// No project package but internal/jsonenc (the JSON byte helpers its hand-written wire
// encoders share with the ledger) and internal/logctx (the log scope of a request), both
// standard library only; third-party: none beyond the standard library.
//
// # Caveats
//
// Errors returned by a [Handler] reach the wire only through [ToRPCError]: anything that
// is not one of this package's sentinels (or an [*Error] built from one) is answered as
// "internal error" and its detail is logged, never sent.
package a2a
