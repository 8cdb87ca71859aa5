package prompt

import (
	"context"
	"errors"
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
		pm.Facts[i] = projection.Fact{Text: f.Text, Evidence: seqs}
	}
	return pm
}

// Stored returns the newest MEMORY_SNAPSHOT entry with seq < beforeSeq (0: all) whose
// range ends at boundary-1, or ok false when the newest one stored at or after the
// boundary does not (the read stops at the entry before the boundary, so its cost is
// what the window holds, not the conversation's length). A record that does not decode
// counts as none.
func Stored(ctx context.Context, r Reader, owner, contextID string, beforeSeq, boundary uint64) (snap ledger.MemorySnapshot, seq uint64, ok bool, err error) {
	if boundary < 2 {
		return ledger.MemorySnapshot{}, 0, false, nil
	}
	es, err := r.LastBefore(ctx, owner, contextID, beforeSeq, 1, func(e *ledger.Entry) bool {
		return e.Kind == ledger.KindMemorySnapshot || e.Seq < boundary
	})
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return ledger.MemorySnapshot{}, 0, false, fmt.Errorf("read memory: %w", err)
	}
	if len(es) == 0 || es[0].Kind != ledger.KindMemorySnapshot {
		return ledger.MemorySnapshot{}, 0, false, nil
	}
	m, derr := ledger.MemoryRecord(&es[0])
	if derr != nil || m.Last != boundary-1 {
		return ledger.MemorySnapshot{}, 0, false, nil
	}
	return m, es[0].Seq, true, nil
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

// replayMemory rebuilds in, the replayed input of the turn of msg, with the memory that
// turn showed (see the rule above); in unchanged when the policy has no memory or
// nothing was dropped.
func replayMemory(ctx context.Context, r Reader, policy projection.Policy, owner, contextID string, hist []ledger.Entry, msg ledger.Entry, in Input) (Input, error) {
	b := in.Stats.OmittedBefore
	if !policy.Memory || b < 2 {
		return in, nil
	}
	snap, seq, ok, err := withTurn(ctx, r, owner, contextID, msg)
	if err == nil && (!ok || snap.Last != b-1) {
		snap, seq, ok, err = Stored(ctx, r, owner, contextID, msg.Seq, b)
	}
	if err != nil || !ok {
		return in, err
	}
	out, err := BuildWithMemory(hist, policy, owner, msg, &snap)
	if err != nil {
		return Input{}, err
	}
	out.MemorySeq = seq
	return out, nil
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
