package conversations

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/memory"
	"github.com/a2a-gateway/gateway/prompt"
	"github.com/a2a-gateway/gateway/redact"
)

// MemoryView is a memory snapshot as operators see it (issue #38): its record, where it
// is in the ledger, and each fact's evidence resolved to the entries it cites.
type MemoryView struct {
	Seq        uint64             `json:"seq"` // the MEMORY_SNAPSHOT entry
	First      uint64             `json:"first"`
	Last       uint64             `json:"last"`
	Summariser string             `json:"summariser"`
	Facts      []FactView         `json:"facts"`
	Problems   []memory.Rejection `json:"problems,omitempty"` // facts the evidence check refuses now
}

// FactView is one fact with its evidence.
type FactView struct {
	Text     string         `json:"text"`
	Trust    ledger.Trust   `json:"trust,omitempty"` // where its words came from
	Evidence []EvidenceView `json:"evidence"`
}

// EvidenceView is one evidence ref resolved: the entry's kind and the start of its text,
// Found false when the ledger has no entry with that seq and hash.
type EvidenceView struct {
	Seq     uint64      `json:"seq"`
	Hash    string      `json:"hash"`
	Found   bool        `json:"found"`
	Kind    ledger.Kind `json:"kind,omitempty"`
	Excerpt string      `json:"excerpt,omitempty"`
}

// memoryView resolves the snapshot entry e against the conversation's entries (look).
func memoryView(e *ledger.Entry, look memory.Lookup) (MemoryView, bool) {
	snap, err := ledger.MemoryRecord(e)
	if err != nil {
		return MemoryView{}, false
	}
	v := MemoryView{Seq: e.Seq, First: snap.First, Last: snap.Last, Summariser: snap.Summariser, Problems: memory.Verify(snap, look)}
	for _, f := range snap.Facts {
		fv := FactView{Text: f.Text, Trust: f.Trust}
		for _, ev := range f.Evidence {
			x := EvidenceView{Seq: ev.Seq, Hash: ev.Hash}
			if src, ok := look(ev.Seq); ok && src.Hash == ev.Hash {
				x.Found, x.Kind, x.Excerpt = true, src.Kind, redact.Cut(memory.Text(src), 160)
			}
			fv.Evidence = append(fv.Evidence, x)
		}
		v.Facts = append(v.Facts, fv)
	}
	return v, true
}

// Memory returns the conversation's latest memory snapshot with its facts' evidence
// resolved, or nil when it has none. Errors: those of [Service.Find]; otherwise the
// ledger's.
func (s *Service) Memory(ctx context.Context, ref Ref) (*MemoryView, error) {
	c, err := s.Find(ctx, ref)
	if err != nil {
		return nil, err
	}
	snaps, err := s.led.Last(ctx, c.Owner, c.ContextID, 1, func(e *ledger.Entry) bool { return e.Kind == ledger.KindMemorySnapshot })
	if err != nil || len(snaps) == 0 {
		return nil, err
	}
	return s.memoryOf(ctx, c, &snaps[0])
}

// showMemory is Show's memory: the newest snapshot among entries, or, when entries are
// only the newest ones (limited) and hold none, the conversation's latest ([Service.Memory]).
func (s *Service) showMemory(ctx context.Context, c ledger.Conversation, entries []ledger.Entry, limited bool) (*MemoryView, error) {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind == ledger.KindMemorySnapshot {
			return s.memoryOf(ctx, c, &entries[i])
		}
	}
	if !limited {
		return nil, nil
	}
	return s.Memory(ctx, Ref{ContextID: c.ContextID, Owner: c.Owner})
}

// memoryOf resolves the snapshot entry e of conversation c.
func (s *Service) memoryOf(ctx context.Context, c ledger.Conversation, e *ledger.Entry) (*MemoryView, error) {
	m, _ := ledger.MemoryRecord(e)
	cited, err := s.cited(ctx, c, m)
	if err != nil {
		return nil, err
	}
	v, ok := memoryView(e, memory.Lookups(cited))
	if !ok {
		return nil, nil
	}
	return &v, nil
}

// cited reads the entries the snapshot m cites (one range read over its span).
func (s *Service) cited(ctx context.Context, c ledger.Conversation, m ledger.MemorySnapshot) ([]ledger.Entry, error) {
	var lo, hi uint64
	for _, f := range m.Facts {
		for _, ev := range f.Evidence {
			if lo == 0 || ev.Seq < lo {
				lo = ev.Seq
			}
			hi = max(hi, ev.Seq)
		}
	}
	if lo == 0 {
		return nil, nil
	}
	es, err := s.led.Range(ctx, c.Owner, c.ContextID, lo-1, int(hi-lo+1))
	if err != nil {
		return nil, err
	}
	return es, s.led.Inflate(ctx, es)
}

// MemoryReport is what [Service.RebuildMemory] found: every stored snapshot checked
// against the ledger and compared with the extractive snapshot rebuilt for its range.
type MemoryReport struct {
	ContextID string          `json:"contextId"`
	Peer      string          `json:"peer"`
	Snapshots []RebuiltMemory `json:"snapshots"`
	// Written is the seq of the snapshot appended (write: the latest range rebuilt,
	// when the latest stored snapshot differs from it or fails the check); 0: none.
	Written uint64 `json:"written,omitempty"`
}

// RebuiltMemory is one stored snapshot, checked and rebuilt.
type RebuiltMemory struct {
	MemoryView
	// Equal: the extractive snapshot rebuilt from the ledger for the same range equals
	// the stored one (always expected for the extractive summariser; a model's differs).
	Equal        bool `json:"equal"`
	RebuiltFacts int  `json:"rebuiltFacts"`
}

// RebuildMemory regenerates the memory snapshots of the conversation ref from its
// ledger (snapshots are a cache, never the truth: DESIGN D-9) with the extractive
// summariser and the service's policy, and checks each stored one's evidence. With write
// it appends the rebuilt snapshot of the latest range when the stored one differs or fails
// the check (the turns that follow show it). Errors: those of [Service.Find]; otherwise the
// ledger's.
func (s *Service) RebuildMemory(ctx context.Context, ref Ref, write bool) (MemoryReport, error) {
	c, err := s.Find(ctx, ref)
	if err != nil {
		return MemoryReport{}, err
	}
	all, err := s.led.Range(ctx, c.Owner, c.ContextID, 0, 0)
	if err != nil {
		return MemoryReport{}, err
	}
	look := memory.Lookups(all)
	rep := MemoryReport{ContextID: c.ContextID, Peer: c.Owner, Snapshots: []RebuiltMemory{}}
	var latest ledger.MemorySnapshot
	for i := range all {
		e := &all[i]
		if e.Kind != ledger.KindMemorySnapshot {
			continue
		}
		r, rebuilt, err := s.rebuildOne(ctx, c, e, look)
		if err != nil {
			return MemoryReport{}, err
		}
		rep.Snapshots = append(rep.Snapshots, r)
		latest = rebuilt
	}
	if n := len(rep.Snapshots); write && n > 0 && (!rep.Snapshots[n-1].Equal || len(rep.Snapshots[n-1].Problems) > 0) && len(latest.Facts) > 0 {
		b, _ := json.Marshal(latest)
		res, err := s.led.Append(ctx, ledger.AppendRequest{Owner: c.Owner, ContextID: c.ContextID, Entries: []ledger.Entry{{
			Kind: ledger.KindMemorySnapshot, Trust: ledger.TrustModel, Visibility: ledger.VisibilityModel, Actor: "operator", Metadata: b}}})
		if err != nil {
			return MemoryReport{}, err
		}
		rep.Written = res.Entries[0].Seq
	}
	return rep, nil
}

// rebuildOne checks the stored snapshot e and rebuilds its range.
func (s *Service) rebuildOne(ctx context.Context, c ledger.Conversation, e *ledger.Entry, look memory.Lookup) (RebuiltMemory, ledger.MemorySnapshot, error) {
	v, ok := memoryView(e, look)
	if !ok {
		return RebuiltMemory{MemoryView: MemoryView{Seq: e.Seq}}, ledger.MemorySnapshot{}, nil
	}
	stored, _ := ledger.MemoryRecord(e)
	rebuilt, _, _, err := prompt.Extractive(ctx, s.led, s.cfg.Policy, c.Owner, c.ContextID, stored.Last)
	if err != nil {
		return RebuiltMemory{}, ledger.MemorySnapshot{}, err
	}
	eq := stored.Summariser == rebuilt.Summariser && slices.EqualFunc(stored.Facts, rebuilt.Facts, func(a, b ledger.MemoryFact) bool {
		return a.Text == b.Text && a.Trust == b.Trust && slices.Equal(a.Evidence, b.Evidence)
	}) && stored.First == rebuilt.First && stored.Version == rebuilt.Version
	return RebuiltMemory{MemoryView: v, Equal: eq, RebuiltFacts: len(rebuilt.Facts)}, rebuilt, nil
}

// TurnFigures is the operator's line for a turn's final STATUS entry (issue #38): "prefix
// reuse 97% (12,288 of 12,700 B, ~3,072 tokens)  provider cached 3,000 of 3,200 tokens";
// "" when the entry records neither.
func TurnFigures(e *ledger.Entry) string {
	f, u := prompt.FiguresOf(e)
	var out []string
	if f != nil && f.PrevRequestBytes > 0 {
		out = append(out, fmt.Sprintf("prefix reuse %d%% (%d of %d B, ~%d tokens)", f.ReuseBytes*100/f.PrevRequestBytes, f.ReuseBytes, f.PrevRequestBytes, f.ReuseTokens))
	}
	if f != nil && f.MemoryFacts > 0 {
		out = append(out, fmt.Sprintf("memory %d facts", f.MemoryFacts))
	}
	if u != nil && u.InputTokens > 0 {
		out = append(out, fmt.Sprintf("provider cached %d of %d tokens", u.CachedTokens, u.InputTokens))
	}
	return strings.Join(out, "  ")
}
