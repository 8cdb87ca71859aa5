// Package memory makes and checks the memory snapshots of long conversations (DESIGN D-9,
// issue #38): when a conversation outgrows its history budget, the turns the projection
// drops are summarised as facts, each citing the ledger entries it was taken from
// (evidence: seq and hash), and only facts whose evidence exists inside the snapshot's
// range and holds the fact are kept. Snapshots are a cache of the ledger, never its truth:
// the deterministic summariser ([Extract]) gives the same snapshot for the same entries,
// so a snapshot can be rebuilt and compared.
//
// # The evidence check
//
// [Check] accepts a proposed fact only if
//
//  1. its text is 1 to [ledger.MaxMemoryFactBytes] bytes, holds no redaction placeholder
//     and has at least one content token (below);
//  2. it cites 1 to [ledger.MaxMemoryEvidence] entries, each one the caller can look up
//     (an existing entry the summariser was shown), with a seq inside the snapshot's
//     range, MODEL_VISIBLE (never AUDIT_ONLY), of a conversational kind (a user message,
//     an agent reply, a tool call or result), and holding no redaction placeholder (a
//     REDACTED entry: its text is never carried into memory);
//  3. it is supported by the cited entries: every content token of the fact occurs among
//     the tokens of the cited entries' texts. Tokens are the maximal runs of Unicode
//     letters and digits, lower-cased (Unicode simple folding); a content token is one of
//     at least three letters or one that contains a digit, so that "a", "is" or "of" do not
//     decide anything but every name, number and word of substance must be in the evidence.
//
// The check is normalised token containment: deterministic, needs no model, and refuses
// an invented name or number. It accepts a reordering of the evidence's words (a model
// may rephrase within the words it was shown) and refuses a paraphrase with new words.
//
// # Imports
//
// ledger (its entry and snapshot types), redact (the placeholder it must never carry) and
// the standard library. Pure: no I/O, no goroutines, no clock.
package memory
