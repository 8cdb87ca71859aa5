package prompt

import (
	"context"
	"fmt"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/memory"
	"github.com/a2a-gateway/gateway/projection"
)

// Which snapshot a turn shows (issue #38). A snapshot covers the ledger entries from the
// start of the conversation to the drop boundary: First 1, Last = Stats.OmittedBefore-1.
// The turn shows the newest snapshot stored before its message whose Last is that; when
// there is none (the boundary moved: a refresh is due), it makes one and stores it in the
// same append as its message, right after it. Replay finds the same one: a snapshot stored
// with the turn's message, else the newest before it with that range.

// ProjectMemory converts a snapshot to the projector's input (nil for nil).
func ProjectMemory(m *ledger.MemorySnapshot) *projection.Memory {
	if m == nil {
		return nil
	}
	pm := &projection.Memory{First: m.First, Last: m.Last, Facts: make([]projection.Fact, len(m.Facts))}
	for i, f := range m.Facts {
		seqs := make([]uint64, len(f.Evidence))
		for j, ev := range f.Evidence {
			seqs[j] = ev.Seq
		}
		pm.Facts[i] = projection.Fact{Text: f.Text, Evidence: seqs, Trust: projection.Trust(f.Trust)}
	}
	return pm
}

// Stored returns the snapshot for the plan's drop boundary b among the history entries
// read (the newest MEMORY_SNAPSHOT entry whose range is 1..b-1), ok false when there is
// none (a refresh is due) or nothing is dropped. A snapshot for b was stored after the
// entry b (when the boundary reached b), and History read back past b (the window starts
// there), so it is found without another read.
func (p *Plan) Stored() (snap ledger.MemorySnapshot, seq uint64, ok bool) {
	b := p.Boundary()
	if b < 2 {
		return ledger.MemorySnapshot{}, 0, false
	}
	for i := len(p.hist) - 1; i >= 0; i-- {
		e := &p.hist[i]
		if e.Kind != ledger.KindMemorySnapshot {
			continue
		}
		if m, ok := p.snapshot(e); ok && m.Last == b-1 {
			return m, e.Seq, true
		}
		if e.Seq < b {
			break
		}
	}
	return ledger.MemorySnapshot{}, 0, false
}

// snapshot decodes the record of the MEMORY_SNAPSHOT entry e (ok false: it does not
// decode), once per entry with a [Cache]. The snapshot's slices are shared with later
// turns: not to be changed.
func (p *Plan) snapshot(e *ledger.Entry) (ledger.MemorySnapshot, bool) {
	if p.snaps == nil {
		m, err := ledger.MemoryRecord(e)
		return m, err == nil
	}
	m, seen := p.snaps[e.Seq]
	if !seen {
		if rec, err := ledger.MemoryRecord(e); err == nil {
			m = &rec
		}
		p.snaps[e.Seq] = m // nil: does not decode
	}
	if m == nil {
		return ledger.MemorySnapshot{}, false
	}
	return *m, true
}

// turnAppendKinds are the kinds stored in the append that begins a turn, after its
// message (the working status, push entries, the memory snapshot and its audits).
func turnAppendKind(k ledger.Kind) bool {
	switch k {
	case ledger.KindStatus, ledger.KindPushConfig, ledger.KindPushOutbox, ledger.KindMemorySnapshot, ledger.KindAudit:
		return true
	}
	return false
}

// withTurn returns the MEMORY_SNAPSHOT stored in the append of the turn whose message is
// msg (right after it, before anything a turn stores later), if any.
func withTurn(ctx context.Context, r Reader, owner, contextID string, msg ledger.Entry) (ledger.MemorySnapshot, uint64, bool, error) {
	es, err := r.Range(ctx, owner, contextID, msg.Seq, 16)
	if err != nil {
		return ledger.MemorySnapshot{}, 0, false, fmt.Errorf("read memory: %w", err)
	}
	for i := range es {
		e := &es[i]
		if !turnAppendKind(e.Kind) {
			break
		}
		if e.Kind == ledger.KindMemorySnapshot {
			m, derr := ledger.MemoryRecord(e)
			return m, e.Seq, derr == nil, nil
		}
	}
	return ledger.MemorySnapshot{}, 0, false, nil
}

// replayMemory renders pl, the plan of the replayed turn of msg, with the memory that
// turn showed (see the rule above): the snapshot stored with its message, else the one
// stored before it for the plan's boundary, else none.
func replayMemory(ctx context.Context, r Reader, policy projection.Policy, owner, contextID string, pl *Plan, msg ledger.Entry) (Input, error) {
	b := pl.Boundary()
	if !policy.Memory || b < 2 {
		return pl.Input(nil), nil
	}
	snap, seq, ok, err := withTurn(ctx, r, owner, contextID, msg)
	if err != nil {
		return Input{}, err
	}
	if !ok || snap.Last != b-1 {
		if snap, seq, ok = pl.Stored(); !ok {
			return pl.Input(nil), nil
		}
	}
	in := pl.Input(&snap)
	in.MemorySeq = seq
	return in, nil
}

// Extractive is [Extractive] for the plan's conversation: the same snapshot and sources.
// A plan made through a [Cache] (and not yet rendered) takes the sources from its
// conversation's window where it holds them.
func (p *Plan) Extractive(ctx context.Context, r Reader, policy projection.Policy, owner, contextID string, last uint64) (snap ledger.MemorySnapshot, early, recent []ledger.Entry, err error) {
	w := p.w
	if w == nil || w.owner != owner || w.contextID != contextID || w.policy != policy {
		return Extractive(ctx, r, policy, owner, contextID, last)
	}
	early, recent, err = w.sources(ctx, r, last, MemorySources)
	if err != nil {
		return ledger.MemorySnapshot{}, nil, nil, err
	}
	snap = memory.Extract(1, last, early, recent, MemoryLimits(policy))
	w.made = madeOf(snap)
	return snap, early, recent, nil
}

// Sources reads the entries a summariser is shown for the range 1..last: the oldest
// source entries (up to n, from the start) and the newest (up to n, before last+1), each
// oldest first, artifacts inflated.
func Sources(ctx context.Context, r Reader, owner, contextID string, last uint64, n int) (early, recent []ledger.Entry, err error) {
	all, err := r.Range(ctx, owner, contextID, 0, min(int(last), 4*n))
	if err != nil {
		return nil, nil, fmt.Errorf("read memory sources: %w", err)
	}
	for i := range all {
		if all[i].Seq <= last && memory.Source(&all[i]) && len(early) < n {
			early = append(early, all[i])
		}
	}
	recent, err = r.LastBefore(ctx, owner, contextID, last+1, n, memory.Source)
	if err != nil {
		return nil, nil, fmt.Errorf("read memory sources: %w", err)
	}
	if err := inflate(ctx, r, early); err != nil {
		return nil, nil, err
	}
	if err := inflate(ctx, r, recent); err != nil {
		return nil, nil, err
	}
	return early, recent, nil
}

// MemorySources is how many of the oldest and of the newest dropped entries a summariser
// is shown ([Sources]).
const MemorySources = 24

// MemoryLimits sizes a snapshot's facts to policy's memory section: two thirds of it for
// the facts' text, the rest for the header and the evidence ids.
func MemoryLimits(policy projection.Policy) memory.Limits {
	return memory.Limits{Bytes: max(memory.DefaultFactBytes, policy.MemoryBytes()*2/3)}
}

// Extractive is the extractive snapshot of entries 1..last of the conversation under
// policy, with the sources it was made from: what a turn stores when its backend is no
// chat model (or the model failed), and what `conversations memory rebuild` compares a
// stored snapshot with. The same ledger gives the same snapshot.
func Extractive(ctx context.Context, r Reader, policy projection.Policy, owner, contextID string, last uint64) (snap ledger.MemorySnapshot, early, recent []ledger.Entry, err error) {
	early, recent, err = Sources(ctx, r, owner, contextID, last, MemorySources)
	if err != nil {
		return ledger.MemorySnapshot{}, nil, nil, err
	}
	return memory.Extract(1, last, early, recent, MemoryLimits(policy)), early, recent, nil
}
