// Package a2aclient is the gateway's outbound A2A client: it sends messages to a peer
// agent (SendMessage, SendStreamingMessage), reads and cancels its tasks, and fetches its
// agent card, in either wire dialect (v1.0 or v0.3, or chosen from the card with
// [DialectAuto]). `gateway send` and the a2a relay agent both use it.
//
// It speaks the protocol through package a2a: the model ([a2a.Message], [a2a.Event] ...),
// the codec ([a2a.EncodeSendParams], [a2a.DecodeEvent] ...) and the error table (a
// JSON-RPC error answer is a [*RemoteError] that errors.Is matches against the a2a
// sentinels through [a2a.SentinelFor]). What is the client's own lives here: the HTTP
// exchange, the SSE stream reader goroutine, the dialect choice from the card, and the
// transport errors ([ErrTransport]).
//
// # Name
//
// The directory is a2a/client (DESIGN §2) and the package is named a2aclient, as in
// a2a-go: callers hold values named client (`client, err := a2aclient.New(…)`, an
// *http.Client called client) often enough that a package named client would be shadowed
// at its own call sites, and "a2aclient.RemoteError" says whose error it is where
// "client.RemoteError" would not. Import it as
//
//	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
//
// # Imports
//
// Project: a2a, internal/sse (the one SSE reader), internal/netx (the one direct-dial
// rule). Third-party: none. Nothing in package a2a imports this package (the dependency
// test enforces it): the server side never needs the client.
//
// # Caveats
//
// A [Client] made without Options.HTTPClient reaches loopback, private, link-local and
// CGNAT (100.64.0.0/10, Tailscale) hosts directly, never through a proxy from the
// environment ([netx.ProxyUnlessLocal]); a given HTTPClient is used as it is.
package a2aclient
