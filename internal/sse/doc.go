// Package sse reads server-sent events (the text/event-stream format of the WHATWG HTML
// standard): the one reader of the gateway, used by the outbound A2A client (a2a/client)
// and by the chat backends (agent).
//
// A [Reader] splits a body into events: lines end with "\n", "\r\n" or a bare "\r"; a
// UTF-8 byte order mark at the start of the stream is skipped; lines starting with ':'
// are comments; a line without ':' is a field with an empty value; one space after the
// colon is stripped; "data:" lines accumulate, joined by "\n"; "event:", "id:" and
// "retry:" are read; other fields are ignored; a blank line dispatches the event if it
// has at least one data line (else it is dropped with its fields); an event the stream
// ends in without its blank line is still returned. One bound, the largest event in bytes
// (every line of it, comments and terminators included, so also the longest line), keeps
// a hostile stream from growing memory; over it Next fails with [ErrTooLong].
//
// # Imports
//
// Standard library only.
//
// # Caveats
//
// The id of an [Event] is the "id:" field of that event only (the standard's last event
// ID persists across events; a caller that needs it keeps it). An id containing NUL is
// ignored, as the standard says. A [Reader] is not safe for concurrent use.
package sse
