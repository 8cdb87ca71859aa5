package turn

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
)

// Refused requests are recorded as AUDIT_ONLY entries of the conversation they were sent
// to (never entering it): a send to a busy context, a cancel refused as busy, a message
// refused for its content. The audit is written off the request path (auditLog), so a
// refusal never waits for an fsync.

// auditQueue bounds the audits waiting to be written: 1,024 rejected requests, a few
// hundred KiB at most.
const auditQueue = 1024

// auditBatch is the most audits one pass of the writer gathers.
const auditBatch = 256

// auditItem is a queued audit; ifExists skips it when its conversation does not exist.
// ctx is the refused request's context without its cancellation: the writer logs with
// it, so its lines carry the request's values (request id).
type auditItem struct {
	ctx      context.Context
	req      ledger.AppendRequest
	ifExists bool
}

// auditLog writes the audits of refused requests. Its queue is bounded (a flood of busy
// sends drops audits, counted); one goroutine, started by newAuditLog and ended by close,
// writes them, each append bounded by timeout.
type auditLog struct {
	store   auditStore
	timeout time.Duration
	log     *slog.Logger
	done    chan struct{} // closed when the writer has returned
	dropped atomic.Uint64

	mu       sync.Mutex // guards queue and lastWarn; never held with another lock
	queue    chan auditItem
	lastWarn time.Time
}

// newAuditLog starts the writer of audits appended to store.
func newAuditLog(store auditStore, timeout time.Duration, log *slog.Logger) *auditLog {
	a := &auditLog{store: store, timeout: timeout, log: log, done: make(chan struct{}), queue: make(chan auditItem, auditQueue)}
	go a.write(a.queue) // exits when close closes the queue and it is drained
	return a
}

// add queues an audit; it never blocks. When the queue is full the audit is dropped and
// counted; the warning says so at most every 10 seconds. After close it does nothing.
func (a *auditLog) add(ctx context.Context, it auditItem) {
	it.ctx = context.WithoutCancel(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.queue == nil {
		return // closed
	}
	select {
	case a.queue <- it:
	default:
		n := a.dropped.Add(1)
		if now := time.Now(); now.Sub(a.lastWarn) >= 10*time.Second {
			a.lastWarn = now
			a.log.WarnContext(ctx, "audit queue full: some rejected requests are not recorded", "dropped_total", n)
		}
	}
}

// close writes what is queued and stops the writer.
func (a *auditLog) close() {
	a.mu.Lock()
	if a.queue != nil {
		close(a.queue)
		a.queue = nil
	}
	a.mu.Unlock()
	<-a.done
}

func (a *auditLog) write(queue <-chan auditItem) {
	defer close(a.done)
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
		a.appendBatch(batch)
	}
}

// appendBatch appends a batch of audits, one append per conversation.
func (a *auditLog) appendBatch(batch []auditItem) {
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
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
			if _, err := a.store.Conversation(ctx, it.req.Owner, it.req.ContextID); err != nil {
				continue // no conversation (or unreadable): a refused request creates none
			}
		}
		if _, err := a.store.Append(ctx, it.req); err != nil {
			a.log.WarnContext(it.ctx, "audit of rejected requests not recorded", "entries", len(it.req.Entries), "err", err)
		}
	}
}

// AuditsDropped returns how many audits of rejected requests were dropped because the
// queue was full.
func (r *Runner) AuditsDropped() uint64 { return r.audits.dropped.Load() }

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
	r.audits.add(ctx, auditItem{req: ledger.AppendRequest{Owner: peer, ContextID: m.ContextID, Entries: []ledger.Entry{auditEntry(peer, m, reason, taskID)}}, ifExists: true})
}
