// Package turn runs one turn of a conversation and implements [a2a.Handler]:
// validate → lease the context → persist the inbound message (fsync'd) → run the agent →
// stream its reply → persist the reply and the final status → release the lease.
//
// Every task record and every task history is folded from the ledger, the single source of
// truth; the in-memory state of a running task is only its event log for live streams.
//
// # Imports
//
// a2a, agent, conversations, ledger (types), locking (types); no driver.
//
// # Caveats
//
// A turn runs detached from the request that started it: a client that disconnects does
// not cancel it. Runner.Close waits for running turns up to its deadline, then cancels
// them; their final appends use a context without cancellation.
package turn
