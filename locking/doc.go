// Package locking provides leases that let only one holder run per key (one running task
// per contextId, DESIGN §5). [Local] is the in-process lease for the embedded,
// single-instance gateway; [Redis] is the lease for several instances sharing a Redis
// server (DESIGN L-2: SET NX PX with a random token, renewed every CheckInterval (at
// most TTL/3, 500ms by default) by a compare-and-PEXPIRE script, released by
// compare-and-DEL). Both have the same methods
// and errors: [*HeldError] (unwrapping to [ErrHeld]) when another holder has the key,
// [ErrClosed] after Close, and for Redis [ErrUnavailable] when the server cannot answer,
// on which callers fail closed (DESIGN L-3: LOCK_UNAVAILABLE, /readyz 503).
//
// # Imports
//
// Standard library, google/uuid and redis/go-redis/v9 (this is its only importer); no
// project package (it locks strings).
//
// # Caveats
//
// A lease is admission, not a fence. A holder that stalls past its TTL (GC pause,
// SIGSTOP, partition) can still be running when a newer holder is admitted; correctness
// comes from the ledger's epoch check (DESIGN L-2), which refuses the stale holder's
// appends. [Lease.Lost] lets the holder stop early: a Redis lease closes it when a
// renewal finds the key gone or someone else's, when Redis has not confirmed a renewal
// for a whole TTL, and on Close. The holder must cancel its work when it fires.
//
// A Redis server without persistence forgets every lease when it restarts: a second
// holder can be admitted at once, and running holders learn at their next renewal (within
// CheckInterval, plus the renewal's round trip) that the lease is lost. That is the
// window in which two holders run; restart_integration_test.go measures it.
//
// When an Acquire times out its SET NX may still be applied later (a hung server that
// resumes): the key then stays held under that holder, with no renewal, until the TTL
// passes.
//
// Locks: Local has one mutex. Redis has Redis.mu (its closed flag, its set of held leases
// and the registration of in-flight calls) and one mutex per Redis lease (its renewal
// timer and state); a lease's mutex may be taken while holding Redis.mu, never the
// reverse. No lock is held across I/O.
package locking
