// Package locking provides leases that let only one holder run per key (one running task
// per contextId, DESIGN §5). This file set has the in-process lease for the embedded,
// single-instance gateway; the Redis lease for several instances shares its API.
//
// A lease is an admission mechanism, not a fence: correctness against a holder whose lease
// expired comes from the ledger's epoch check (DESIGN L-2).
//
// # Imports
//
// Standard library and google/uuid; no project package (it locks strings).
//
// # Caveats
//
// The in-process Locker has one mutex and never holds it across I/O.
package locking
