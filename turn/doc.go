// Package turn runs one turn of a conversation and implements [a2a.Handler]:
// validate → lease the context → persist the inbound message (fsync'd) → run the agent →
// stream its reply → persist the reply and the final status → release the lease.
//
// Every request names its caller ([WithPeer], set by the transport); one that names none
// is refused. The peers' request rate is limited before a request reaches the Runner
// (cmd/gateway); the Runner bounds each peer's open streams (Config.MaxStreamsPerPeer).
// The Runner's jobs live in files of their own; see [Runner].
//
// Every task record and every task history is folded from the ledger, the single source of
// truth. Stream events are ledger entries too, numbered with the context's seq and
// published to the context's live feed after the commit that stored them; a stream
// replays what it has not seen from the ledger, then follows the feed, dropping by seq
// what it already has (no gap, no duplicate). While someone watches a context (over a
// shared store, on any instance: Runner.WatchedElsewhere), the reply is stored as
// REPLY_CHUNK entries as it streams (one per commit); otherwise only the final
// AGENT_REPLY is written. Replies are redacted for credentials as they stream.
//
// # Locks
//
// Runner.mu (the live tasks), then the live feed's (feed.Feeds), when nested. Each small
// type of the Runner guards its own state with a lock never held with another:
// leases.mu (the handovers), auditLog.mu, openStreams.mu, outbox.mu, prefixTracker.mu,
// chunks.mu. None is held across I/O.
//
// # Imports
//
// The "turn" row of the dependency table that internal/depcheck enforces
// (internal/depcheck/depcheck_test.go) is the list. In short: the packages a turn
// orchestrates (ledger and locking for their types), never a driver (bbolt, Redis,
// PostgreSQL) nor a transport (echo, gorilla/websocket).
//
// # Caveats
//
// A turn runs detached from the request that started it: a client that disconnects does
// not cancel it. Runner.Close waits for running turns up to its deadline, then cancels
// them; their final appends use a context without cancellation.
package turn
