// Package httpguard holds the guards the gateway puts in front of every route of a
// listener, before any handler runs:
//
//   - [BodyLimits] bounds reading a request body in time and in rate, so that a client
//     that sends full headers and then trickles its body (or sends nothing more) cannot
//     hold a connection, a goroutine and their buffers for long. It works per request,
//     with the connection's read deadline (http.ResponseController), and lifts the
//     deadline once the body has been read: a global http.Server.ReadTimeout would stay
//     on the connection while a response streams and cut SSE streams at the deadline.
//   - [Hosts] is the allow-list of Host names the listener serves. It defeats DNS
//     rebinding: a web page at http://evil.example:9900 whose name is made to resolve to
//     127.0.0.1 reaches a loopback gateway with "Host: evil.example:9900", and the
//     browser treats the answers as the page's own.
//
// # Imports
//
// Standard library only.
//
// # Caveats
//
// A bound that is hit sets the connection's read deadline in the past: the server then
// cancels the request's context and closes the connection after the handler's answer.
// The handler sees a [*BodyError] from the body's Read and should answer 408 (or nothing).
package httpguard
