package ledger

import (
	"encoding/json"
	"fmt"
)

// Memory snapshots (DESIGN D-9, issue #38) live in the ledger as MEMORY_SNAPSHOT entries
// of the conversation they summarise: trust MODEL_GENERATED, visibility MODEL_VISIBLE
// (their facts are shown to the model, under the reference-only boundary), the record
// ([MemorySnapshot]) as the entry's Metadata. A snapshot is a cache, never the truth:
// package memory makes and checks them and can rebuild them from the entries they cite.
// Append checks the record's shape (below); whether each fact's evidence exists and holds
// the fact is package memory's check, made before the entry is written.

// MemoryVersion is the version of the snapshot record format this build writes.
const MemoryVersion = 1

// Limits of a snapshot record.
const (
	MaxMemoryFacts     = 256  // facts per snapshot
	MaxMemoryFactBytes = 1024 // bytes per fact text
	MaxMemoryEvidence  = 16   // evidence refs per fact
)

// MemorySnapshot is the record of a MEMORY_SNAPSHOT entry: the facts kept of the ledger
// entries First..Last (seqs, inclusive) of its conversation.
type MemorySnapshot struct {
	Version int    `json:"version"`
	First   uint64 `json:"first"` // the first seq the snapshot covers
	Last    uint64 `json:"last"`  // the last seq it covers
	// Summariser names who proposed the facts: "extractive" (the gateway's deterministic
	// summariser) or "model:<backend>".
	Summariser string       `json:"summariser"`
	Facts      []MemoryFact `json:"facts"`
}

// MemoryFact is one fact with the entries that hold it. Trust is the least trusted of
// those entries' trust levels (PEER_UNTRUSTED when any is): where the fact's words came
// from, shown with it, so that a peer's words do not pass for the model's.
type MemoryFact struct {
	Text     string     `json:"text"`
	Evidence []Evidence `json:"evidence"`
	Trust    Trust      `json:"trust,omitempty"`
}

// Evidence names one ledger entry of the conversation: its seq and its hash.
type Evidence struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// MemoryRecord decodes the record of a MEMORY_SNAPSHOT entry. Fields it does not know are
// ignored (a newer build may write more); Append refuses them.
func MemoryRecord(e *Entry) (MemorySnapshot, error) {
	var m MemorySnapshot
	if e.Kind != KindMemorySnapshot {
		return m, invalidField("kind", "%s is not %s", e.Kind, KindMemorySnapshot)
	}
	err := json.Unmarshal(e.Metadata, &m)
	return m, err
}

// validateMemory checks a MEMORY_SNAPSHOT entry of a request: trust, visibility, and a
// record whose range is ordered and whose every fact has text and evidence inside the
// range, each naming a seq and a hash of 64 lowercase hex digits.
func validateMemory(i int, e *Entry) error {
	switch {
	case e.Trust != TrustModel:
		return invalidEntry(i, "trust", "a %s entry is %s", e.Kind, TrustModel)
	case e.Visibility != VisibilityModel:
		return invalidEntry(i, "visibility", "a %s entry is %s", e.Kind, VisibilityModel)
	case len(e.Metadata) == 0:
		return invalidEntry(i, "metadata", "a %s entry holds its record", e.Kind)
	}
	var m MemorySnapshot
	if err := strictRecord(e, &m); err != nil {
		return invalidEntry(i, "metadata", "%s record: %s", e.Kind, err)
	}
	if reason := memoryFault(&m); reason != "" {
		return invalidEntry(i, "metadata", "%s record: %s", e.Kind, reason)
	}
	return nil
}

// memoryFault says what is wrong with a snapshot record, or "" when nothing is.
func memoryFault(m *MemorySnapshot) string {
	switch {
	case m.Version < 1:
		return "version ≥ 1 is required"
	case m.First < 1 || m.Last < m.First:
		return fmt.Sprintf("range %d..%d: want 1 ≤ first ≤ last", m.First, m.Last)
	case m.Summariser == "" || len(m.Summariser) > MaxIDBytes:
		return "summariser is required (at most 256 bytes)"
	case len(m.Facts) > MaxMemoryFacts:
		return fmt.Sprintf("%d facts, at most %d", len(m.Facts), MaxMemoryFacts)
	}
	for j := range m.Facts {
		f := &m.Facts[j]
		switch {
		case f.Text == "" || len(f.Text) > MaxMemoryFactBytes:
			return fmt.Sprintf("facts[%d].text: 1 to %d bytes", j, MaxMemoryFactBytes)
		case len(f.Evidence) == 0 || len(f.Evidence) > MaxMemoryEvidence:
			return fmt.Sprintf("facts[%d].evidence: 1 to %d refs", j, MaxMemoryEvidence)
		case f.Trust != "" && !f.Trust.Valid():
			return fmt.Sprintf("facts[%d].trust: unknown value %q", j, f.Trust)
		}
		for k, ev := range f.Evidence {
			if ev.Seq < m.First || ev.Seq > m.Last {
				return fmt.Sprintf("facts[%d].evidence[%d]: seq %d outside %d..%d", j, k, ev.Seq, m.First, m.Last)
			}
			if traceIDFault(ev.Hash, 64) != "" {
				return fmt.Sprintf("facts[%d].evidence[%d].hash: 64 lowercase hex digits", j, k)
			}
		}
	}
	return ""
}
