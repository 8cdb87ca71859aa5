package turn

import (
	"context"
	"encoding/json"
	"time"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/memory"
	"github.com/a2a-gateway/gateway/prompt"
)

// Memory of long conversations (issue #38). When the projection drops turns, the agent is
// shown the snapshot covering them (entries 1..boundary-1): the one stored when the
// boundary last moved, or, when the boundary has moved since, a new one made now and
// stored with the turn's message. The conversation's chat backend proposes the facts
// (agent.Summariser, bounded by Config.MemoryTimeout) and package memory keeps those whose
// evidence holds them; the extractive summariser stands in for other backends and when the
// model fails. A failed summary never fails the turn: it is audited, and the turn falls
// back to the extractive summary, or to plain dropping.

// defaultMemoryTimeout bounds a model's summary when Config.MemoryTimeout is 0.
const defaultMemoryTimeout = 20 * time.Second

// memoryFor chooses the memory the turn of in shows with the plan pl: the stored
// snapshot for its drop boundary, or a new one with its entries (to store with the
// message); nil when nothing is dropped or there is nothing to show.
func (r *Runner) memoryFor(ctx context.Context, in *inbound, pl *prompt.Plan) (mem *ledger.MemorySnapshot, entries []ledger.Entry, seq uint64) {
	b := pl.Boundary()
	if !r.cfg.Policy.Memory || b < 2 {
		return nil, nil, 0
	}
	if snap, seq, ok := pl.Stored(); ok {
		return &snap, nil, seq
	}
	snap, entries, made := r.summarise(ctx, in, pl, b-1)
	if !made {
		return nil, entries, 0
	}
	return &snap, entries, 0
}

// summarise makes the snapshot of entries 1..last (the sources read through pl): its entries (the snapshot, and audits
// of refused facts or of a failed model) and made false when there is no snapshot to
// show (nothing to summarise, or the ledger could not be read).
func (r *Runner) summarise(ctx context.Context, in *inbound, pl *prompt.Plan, last uint64) (ledger.MemorySnapshot, []ledger.Entry, bool) {
	extract, early, recent, err := pl.Extractive(ctx, r.store, r.cfg.Policy, in.peer, in.m.ContextID, last)
	if err != nil {
		return ledger.MemorySnapshot{}, []ledger.Entry{memoryAudit(in, "MEMORY_SUMMARY_FAILED", last, "dropping without memory: "+err.Error(), nil)}, false
	}
	var audits []ledger.Entry
	if s, ok := r.agent.(agent.Summariser); ok {
		snap, rejected, err := r.modelSummary(ctx, s, last, early, recent)
		if len(rejected) > 0 {
			audits = append(audits, memoryAudit(in, "MEMORY_FACT_REJECTED", last, "", rejected))
		}
		if err == nil && len(snap.Facts) > 0 {
			return snap, append([]ledger.Entry{snapshotEntry(snap)}, audits...), true
		}
		reason := "the model proposed no fact that passed the evidence check"
		if err != nil {
			reason = err.Error()
		}
		r.log.WarnContext(ctx, "memory summary by the model failed; using the extractive summary", "err", reason)
		audits = append(audits, memoryAudit(in, "MEMORY_SUMMARY_FAILED", last, "fell back to the extractive summariser: "+reason, nil))
	}
	if len(extract.Facts) == 0 {
		return extract, append(audits, memoryAudit(in, "MEMORY_SUMMARY_FAILED", last, "no fact to keep; dropping without memory", nil)), false
	}
	return extract, append([]ledger.Entry{snapshotEntry(extract)}, audits...), true
}

// modelSummary asks the backend for the facts of 1..last and checks them.
func (r *Runner) modelSummary(ctx context.Context, s agent.Summariser, last uint64, early, recent []ledger.Entry) (ledger.MemorySnapshot, []memory.Rejection, error) {
	shown := summaryEntries(early, recent)
	d := r.cfg.MemoryTimeout
	if d <= 0 {
		d = defaultMemoryTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	facts, err := s.Summarise(sctx, shown, max(1, prompt.MemoryLimits(r.cfg.Policy).Bytes/memory.DefaultFactBytes))
	if err != nil {
		return ledger.MemorySnapshot{}, nil, err
	}
	var p memory.Proposal
	for _, f := range facts {
		p.Facts = append(p.Facts, memory.Proposed{Text: f.Fact, Evidence: f.Evidence})
	}
	snap, rejected := memory.Check(1, last, "model:"+s.SummariserName(), p, memory.Lookups(early, recent))
	return snap, rejected, nil
}

// summaryEntries is what a summariser is shown: early then the recent entries not
// already in it, in seq order.
func summaryEntries(early, recent []ledger.Entry) []agent.SummaryEntry {
	out := make([]agent.SummaryEntry, 0, len(early)+len(recent))
	var top uint64
	for _, list := range [][]ledger.Entry{early, recent} {
		for i := range list {
			e := &list[i]
			if e.Seq <= top {
				continue
			}
			top = e.Seq
			role := "user"
			if e.Kind != ledger.KindUserMessage {
				role = "agent"
			}
			out = append(out, agent.SummaryEntry{Seq: e.Seq, Role: role, Text: memory.Text(e)})
		}
	}
	return out
}

// snapshotEntry is the MEMORY_SNAPSHOT entry of snap. Like audits it names no task, so it
// never joins a task's history.
func snapshotEntry(snap ledger.MemorySnapshot) ledger.Entry {
	b, _ := json.Marshal(snap)
	return ledger.Entry{Kind: ledger.KindMemorySnapshot, Trust: ledger.TrustModel, Visibility: ledger.VisibilityModel,
		Actor: "gateway", Metadata: b}
}

// memoryAudit is the audit-only record of a memory event: what (MEMORY_FACT_REJECTED,
// MEMORY_SUMMARY_FAILED, MEMORY_UNAVAILABLE), for the range 1..last, why, and the refused
// facts with their reasons.
func memoryAudit(in *inbound, what string, last uint64, reason string, rejected []memory.Rejection) ledger.Entry {
	meta := map[string]any{"audit": what, "taskId": in.taskID, "memoryFirst": 1, "memoryLast": last}
	if reason != "" {
		meta["reason"] = reason
	}
	if len(rejected) > 0 {
		meta["rejected"] = rejected
	}
	b, _ := json.Marshal(meta)
	return ledger.Entry{Kind: ledger.KindAudit, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit,
		Actor: "gateway", Metadata: b}
}
