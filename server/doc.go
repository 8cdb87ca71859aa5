// Package server is the gateway's HTTP server: [Open] validates a [Config], binds its
// address, opens the ledger (bbolt or PostgreSQL), the lease service (in-process or
// Redis), the agent backend, push delivery and the turn runner, recovers the turns the
// last stop interrupted, and serves; [Server.Serve] waits for the end and
// [Server.Close] shuts down in order. `gateway serve` (cmd/gateway) fills the Config
// from flags, environment and config file and calls them; tests run the real server
// in-process the same way.
//
// One router, echo, serves every route of the listener: the A2A JSON-RPC endpoint
// (POST / and /a2a, package a2a's transport), GET /ws (package streaming), the agent
// card, the JWKS of push signatures, /admin/v1 (the conversations service), /console,
// /metrics, /debug/pprof, /healthz and /readyz, and the tools endpoint of a turn's
// process. Before routing come the listener-wide guard (the Host allow-list and the
// body bounds of internal/httpguard) and the request id (X-Request-Id, carried in the
// context so that every log line of the request names it); the A2A routes add peer
// authentication (bearer tokens of the configured peers, with a throttle on wrong ones).
//
// The admin API's client ([AdminClient]) is here too, beside the API it talks to: the
// CLI's --server mode rebuilds the service's typed errors from the codes it answers
// with.
//
// # Imports
//
// Everything below it (turn, conversations, console, streaming, push, tools, ledger,
// ledger/postgres, locking, agent, a2a) and echo, whose only importer it is; only
// cmd/gateway imports it. internal/depcheck holds the rule.
package server
