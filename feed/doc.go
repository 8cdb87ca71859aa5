// Package feed is the per-context live feed (DESIGN §2): a context's events fanned out,
// in the order the ledger stored them, to the streams that read it live ([Feeds]). The
// turn publishes to it after each commit; SSE streams and the WebSocket endpoint
// (package streaming) read it through a [Cursor], falling back to the ledger for what
// they missed. It does no I/O and starts no goroutine.
//
// # Imports
//
// a2a only: the feed is a leaf, so that the turn runner reaches it without importing the
// WebSocket package (gorilla/websocket).
package feed
