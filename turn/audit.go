package turn

import (
	"context"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
)

// auditQueue bounds the audits waiting to be written: 1,024 rejected requests, a few
// hundred KiB at most.
const auditQueue = 1024

// auditItem is a queued audit; ifExists skips it when its conversation does not exist.
// ctx is the refused request's context without its cancellation: the writer logs with
// it, so its lines carry the request's values (request id).
type auditItem struct {
	ctx      context.Context
	req      ledger.AppendRequest
	ifExists bool
}

func (r *Runner) writeAudits(queue <-chan auditItem) {
	defer close(r.auditsDone)
	batch := make([]auditItem, 0, auditBatch)
	for first := range queue {
		// Drain what else is queued: a flood of busy rejections for one context becomes one
		// append, not one commit each.
		batch = append(batch[:0], first)
	drain:
		for len(batch) < auditBatch {
			select {
			case it, ok := <-queue:
				if !ok {
					break drain
				}
				batch = append(batch, it)
			default:
				break drain
			}
		}
		r.appendAudits(batch)
	}
}

// auditBatch is the most audits one pass of the writer gathers.
const auditBatch = 256

// appendAudits appends a batch of audits, one append per conversation.
func (r *Runner) appendAudits(batch []auditItem) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.FinalizeTimeout)
	defer cancel()
	type convKey struct{ owner, contextID string }
	groups := map[convKey]*auditItem{}
	var order []convKey
	for i := range batch {
		k := convKey{batch[i].req.Owner, batch[i].req.ContextID}
		if g, ok := groups[k]; ok {
			g.req.Entries = append(g.req.Entries, batch[i].req.Entries...)
			g.ifExists = g.ifExists && batch[i].ifExists
			continue
		}
		it := batch[i]
		it.req.Entries = append([]ledger.Entry(nil), it.req.Entries...)
		groups[k] = &it
		order = append(order, k)
	}
	for _, k := range order {
		it := groups[k]
		if it.ifExists {
			if _, err := r.led.Conversation(ctx, it.req.Owner, it.req.ContextID); err != nil {
				continue // no conversation (or unreadable): a refused request creates none
			}
		}
		if _, err := r.led.Append(ctx, it.req); err != nil {
			r.log.WarnContext(it.ctx, "audit of rejected requests not recorded", "entries", len(it.req.Entries), "err", err)
		}
	}
}

// audit queues an audit-only record of a rejected request; it never blocks. When the queue
// is full the audit is dropped and counted; the warning says so at most every 10 seconds.
func (r *Runner) audit(ctx context.Context, req auditItem) {
	req.ctx = context.WithoutCancel(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.audits == nil {
		return // closed
	}
	select {
	case r.audits <- req:
	default:
		n := r.auditsDropped.Add(1)
		if now := time.Now(); now.Sub(r.lastDropWarn) >= 10*time.Second {
			r.lastDropWarn = now
			r.log.WarnContext(ctx, "audit queue full: some rejected requests are not recorded", "dropped_total", n)
		}
	}
}

// AuditsDropped returns how many audits of rejected requests were dropped because the
// queue was full.
func (r *Runner) AuditsDropped() uint64 { return r.auditsDropped.Load() }

// auditEntry is the audit-only record of a rejected request.
func auditEntry(peer string, m *a2a.Message, reason, taskID string) ledger.Entry {
	parts, _ := redactParts(m.Parts)
	m = &a2a.Message{MessageID: m.MessageID, Parts: parts}
	meta := map[string]any{"rejected": reason}
	if taskID != "" {
		meta["taskId"] = taskID
	}
	return ledger.Entry{
		Kind: ledger.KindAudit, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityAudit,
		Actor: peer, MessageID: m.MessageID, Role: ledger.RoleUser, Parts: toLedgerParts(parts),
		Metadata: marshalMeta(meta),
	}
}

// cancelAuditEntry is the audit-only record of a CancelTask of taskID refused with
// CONTEXT_BUSY because task holder ("" when unknown) runs in the task's conversation. Like
// every audit entry it names tasks in its metadata only, so it never joins a task's
// history.
func cancelAuditEntry(peer, taskID, holder string) ledger.Entry {
	meta := map[string]any{"rejected": "CONTEXT_BUSY", "method": "CancelTask", "taskId": taskID}
	if holder != "" {
		meta["runningTaskId"] = holder
	}
	return ledger.Entry{
		Kind: ledger.KindAudit, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityAudit,
		Actor: peer, Metadata: marshalMeta(meta),
	}
}

// auditRejected records a request refused for its content in the conversation it was
// sent to, as an audit-only entry, when that conversation exists (a refused request never
// creates one: bad input leaves no conversation behind).
func (r *Runner) auditRejected(ctx context.Context, peer string, m *a2a.Message, reason, taskID string) {
	if m.ContextID == "" || contextid.Validate(m.ContextID) != nil {
		return
	}
	r.audit(ctx, auditItem{req: ledger.AppendRequest{Owner: peer, ContextID: m.ContextID, Entries: []ledger.Entry{auditEntry(peer, m, reason, taskID)}}, ifExists: true})
}
