package memory

import (
	"strings"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/redact"
)

// Proposal is what a summariser proposes for a range: facts, each citing entries by seq.
// The hashes are the ledger's, filled in by [Check]; a summariser (a model) gives seqs.
type Proposal struct {
	Facts []Proposed
}

// Proposed is one proposed fact.
type Proposed struct {
	Text     string   `json:"fact"`
	Evidence []uint64 `json:"evidence"`
}

// Rejection is a proposed fact [Check] refused, and why.
type Rejection struct {
	Text     string   `json:"fact"`
	Evidence []uint64 `json:"evidence,omitempty"`
	Reason   string   `json:"reason"`
}

// Rejection reasons (the start of Rejection.Reason).
const (
	ReasonNoEvidence  = "no evidence"
	ReasonOutside     = "evidence outside the range"
	ReasonNoEntry     = "evidence names no entry"
	ReasonNotVisible  = "evidence is not model-visible"
	ReasonRedacted    = "redacted text"
	ReasonUnsupported = "not supported by its evidence"
	ReasonText        = "bad text"
	ReasonTooMany     = "too many facts"
)

// Lookup finds an entry of the conversation by seq: the entries the summariser was
// shown. ok is false for any other seq.
type Lookup func(seq uint64) (e *ledger.Entry, ok bool)

// Check is the evidence check of the package doc: it returns the snapshot of the range
// first..last holding the facts of p that pass, each with its evidence's hashes, in the
// order proposed, and the facts refused with their reasons. summariser names who
// proposed them. A fact proposed twice (same text) is kept once.
func Check(first, last uint64, summariser string, p Proposal, look Lookup) (ledger.MemorySnapshot, []Rejection) {
	snap := ledger.MemorySnapshot{Version: ledger.MemoryVersion, First: first, Last: last, Summariser: summariser}
	var rejected []Rejection
	seen := map[string]bool{}
	for _, f := range p.Facts {
		text := strings.Join(strings.Fields(f.Text), " ")
		fact, reason := checkFact(first, last, text, f.Evidence, look)
		switch {
		case reason == "" && len(snap.Facts) >= ledger.MaxMemoryFacts:
			reason = ReasonTooMany
		case reason == "" && seen[text]:
			continue
		}
		if reason != "" {
			rejected = append(rejected, Rejection{Text: describe(f.Text), Evidence: f.Evidence, Reason: reason})
			continue
		}
		seen[text] = true
		snap.Facts = append(snap.Facts, fact)
	}
	return snap, rejected
}

// checkFact checks one fact (its text normalised); reason is "" when it passes.
func checkFact(first, last uint64, text string, seqs []uint64, look Lookup) (ledger.MemoryFact, string) {
	switch {
	case text == "" || len(text) > ledger.MaxMemoryFactBytes:
		return ledger.MemoryFact{}, errorf("%s: 1 to %d bytes", ReasonText, ledger.MaxMemoryFactBytes)
	case strings.Contains(text, redact.Prefix):
		return ledger.MemoryFact{}, ReasonRedacted + ": the fact holds a redaction placeholder"
	case len(seqs) == 0:
		return ledger.MemoryFact{}, ReasonNoEvidence
	case len(seqs) > ledger.MaxMemoryEvidence:
		return ledger.MemoryFact{}, errorf("%s: more than %d refs", ReasonText, ledger.MaxMemoryEvidence)
	}
	fact := ledger.MemoryFact{Text: text}
	texts := make([]string, 0, len(seqs))
	trusts := make([]ledger.Trust, 0, len(seqs))
	for _, seq := range seqs {
		if seq < first || seq > last {
			return ledger.MemoryFact{}, errorf("%s: #%d not in #%d..#%d", ReasonOutside, seq, first, last)
		}
		e, ok := look(seq)
		if !ok || e == nil || e.Seq != seq {
			return ledger.MemoryFact{}, errorf("%s: #%d", ReasonNoEntry, seq)
		}
		if !Source(e) {
			return ledger.MemoryFact{}, errorf("%s: #%d is %s %s", ReasonNotVisible, seq, e.Kind, e.Visibility)
		}
		t := Text(e)
		if strings.Contains(t, redact.Prefix) {
			return ledger.MemoryFact{}, errorf("%s: #%d holds a redaction", ReasonRedacted, seq)
		}
		texts, trusts = append(texts, t), append(trusts, e.Trust)
		fact.Evidence = append(fact.Evidence, ledger.Evidence{Seq: seq, Hash: e.Hash})
	}
	if !Supported(text, texts...) {
		return ledger.MemoryFact{}, ReasonUnsupported
	}
	fact.Trust = LeastTrusted(trusts...)
	return fact, ""
}

// Verify checks a stored snapshot against the entries it cites (look): the facts that
// fail the check (as [Check] would refuse them), none when the snapshot holds.
func Verify(snap ledger.MemorySnapshot, look Lookup) []Rejection {
	var out []Rejection
	for _, f := range snap.Facts {
		seqs := make([]uint64, len(f.Evidence))
		for i, ev := range f.Evidence {
			seqs[i] = ev.Seq
			if e, ok := look(ev.Seq); ok && e.Hash != ev.Hash {
				out = append(out, Rejection{Text: describe(f.Text), Evidence: seqs, Reason: errorf("%s: #%d's hash differs", ReasonNoEntry, ev.Seq)})
				continue
			}
		}
		if _, reason := checkFact(snap.First, snap.Last, f.Text, seqs, look); reason != "" {
			out = append(out, Rejection{Text: describe(f.Text), Evidence: seqs, Reason: reason})
		}
	}
	return out
}

// Lookups returns a Lookup over entries.
func Lookups(entries ...[]ledger.Entry) Lookup {
	m := map[uint64]*ledger.Entry{}
	for _, es := range entries {
		for i := range es {
			m[es[i].Seq] = &es[i]
		}
	}
	return func(seq uint64) (*ledger.Entry, bool) {
		e, ok := m[seq]
		return e, ok
	}
}
