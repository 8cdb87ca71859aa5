// Package streaming serves the gateway's WebSocket, GET /ws (DESIGN §7, W-1..W-4): live
// consumers call any A2A method over one socket, receive streamed replies as they are
// produced, and watch whole conversations (every task of a contextId) with a resume point.
//
// # Frames
//
// Both directions carry JSON-RPC 2.0, one JSON object per text frame. A request frame gets
// response frames with the same id (echoed with its JSON type):
//
//   - A non-streaming A2A method (SendMessage, GetTask, ListTasks, CancelTask,
//     GetExtendedAgentCard and the v0.3 twins message/send, tasks/get ...) gets exactly
//     one response frame, a result or an error. Calls on one connection run concurrently
//     (SendMessage blocks until its turn ends without holding up the others), at most
//     Config.MaxInFlight calls and streams at once; beyond that the request gets a -32000
//     RATE_LIMITED error frame. A call's slot is free before its answer is sent, a
//     streaming method's (and its request id) when its final event is queued, so a
//     client that has either may send its next request at once.
//   - A streaming A2A method (SendStreamingMessage, SubscribeToTask, message/stream,
//     tasks/resubscribe) gets one result frame per event, whose result is the event object
//     (as the SSE transport sends it) plus "seq". When the stream ends nothing more is sent
//     for that id: its last event is final (a terminal or input-required state). An error
//     gets one error frame and ends the stream. SubscribeToTask and tasks/resubscribe take
//     "afterSeq" in their params as the resume point (the SSE transport's Last-Event-ID).
//   - conversations/subscribe, params {"contextId": string, "afterSeq": number (default
//     0), "dialect": "1.0" | "0.3" (default "1.0")}, streams every event of the caller's
//     context (all its tasks) with seq > afterSeq as result frames with the request's id:
//     first the replay from the ledger, then live, with no gap and no duplicate. It does
//     not end by itself.
//   - conversations/unsubscribe, params {"id": the subscribe (or any streaming) request's
//     id}, stops that stream and answers {"result": {}} after the stream's last frame,
//     whether or not the stream was still running. Sent as a notification (no id) it stops
//     the stream and is not answered.
//
// A2A method names pick the encoding: v1.0 names answer in v1.0 (StreamResponse wrappers,
// TASK_STATE_*), v0.3 names in v0.3 (kind, final). Malformed JSON, an invalid envelope,
// an unknown method and bad params get an error frame from the one error table (-32700,
// -32600, -32601, -32602), with a null id when the id could not be read. Notifications
// other than conversations/unsubscribe are refused with an error frame with a null id
// (no stream could be addressed to them). A frame over Config.ReadLimit gets a -32600
// error frame and the connection is closed with 1009 (message too big).
//
// # Sequence numbers, append-only, resume
//
// Every event frame carries "seq": the context's sequence number of the event
// (increasing, gap-free per context). Frames are append-only: there is no edit or replace
// frame, a reply streams as artifact chunks that are only ever appended, and the final
// reply is the concatenation of its chunks. A client that reconnects resumes a context
// with conversations/subscribe {"contextId": …, "afterSeq": the last seq it received}, or
// a task with SubscribeToTask {"id": …, "afterSeq": …}: the events after it are replayed
// from the ledger, then the stream continues live.
//
// # Slow consumers
//
// A connection has one bounded send queue (Config.SendBuffer frames). Producers never
// wait on it: when it is full the connection is closed with 1008 (policy violation) and a
// reason naming what to resume and the seq of that stream's last event actually written
// to the socket, e.g. "slow consumer: resume ctx-42 with afterSeq=17" or "slow consumer:
// resume task t-1 with afterSeq=17" (long contextIds are truncated to fit the 123-byte
// limit). The turn, the ledger and other connections are never blocked by a slow
// consumer. Keep-alive: the server pings every Config.PingInterval and drops a peer it has
// not heard from (pong or frame) for twice that; every frame is written under
// Config.WriteTimeout.
//
// # The live feed
//
// [Feeds] is the per-context live feed behind every stream, whichever transport carries
// it (this WebSocket or the SSE of the A2A handler): the turn publishes each event after
// the commit that stored it, with the entry's seq; a stream joins the feed, replays from
// the ledger what it has not seen, then follows the feed ([Cursor]), dropping by seq what
// it already has. A cursor that falls more than [Feeds].Backlog events behind gets
// [ErrLagged] and catches up from the ledger again.
//
// # Origins and authentication
//
// The Origin is checked before upgrading (403 for a disallowed one; see
// Config.AllowedOrigins), against the configured list only, never against the request's
// Host (which a DNS rebinding page controls), and so is the peer's number of open
// connections (429 beyond Config.MaxConnsPerPeer, default 16). Authentication is the HTTP
// middleware's in front of the handler:
// the upgrade request's context carries the caller, and every call and stream of the
// connection runs under a context derived from it.
//
// # Goroutines and locks
//
// Per connection: the reader (the ServeHTTP goroutine, which keeps the request's context
// alive), exactly one writer (every socket write, the ping ticker, the close frame), and
// one goroutine per in-flight call or stream (the stream's "pump": Stream.Next, encode,
// non-blocking hand-off to the send queue). All are owned by the connection (a WaitGroup
// and a cancel) and end when it closes; every stream is Closed. [Handler.Shutdown] sends
// CloseGoingAway to every connection and returns; [Handler.Wait] waits for them all.
//
// Lock order: Handler.mu, then conn.mu (Shutdown collects connections under Handler.mu and
// closes them after releasing it, so the two are never held together today). Neither is
// held across I/O or a channel operation that can block.
//
// # Imports
//
// Project: a2a only. Third-party: github.com/gorilla/websocket (this package is its only
// importer).
//
// # Caveats
//
// A close reason can only reach a client that reads: a consumer that has stopped reading
// entirely has its socket closed after WriteTimeout without one, and resumes from the
// last seq it received. A replay larger than SendBuffer plus the kernel's socket buffer
// on a slow link can overflow; the client resumes from the named seq and progresses by at
// least that much per connection.
package streaming
