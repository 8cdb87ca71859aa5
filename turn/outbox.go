package turn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/push"
)

// The push outbox (issue #20). With push enabled the Runner's ledger is wrapped in an
// outboxLedger: every Append that carries a task's status change or artifact update
// (STATUS, REPLY_CHUNK, or an AGENT_REPLY that is an artifact: whatever entryEvent makes
// a status or artifact event) gets, in the SAME request, one PUSH_OUTBOX entry per live
// config of that task, holding the payload already encoded in the dialect of the peer
// that set the config. So a notification is durable exactly when its event is: a refused
// or failed append stores neither. The deliverer (package push) reads them through
// [Runner.PushOutbox].

// EventIDKey is the metadata key of a notification's payload (the status or artifact
// update's metadata) that holds its stable event id.
const EventIDKey = "eventId"

// Content types of the notification bodies.
const (
	contentTypeV1  = "application/a2a+json"
	contentTypeV03 = "application/json"
)

// outboxLedger adds the outbox entries of the events an Append carries; notify is
// Config.PushNotify (nil: none).
type outboxLedger struct {
	Ledger
	o      *outbox
	notify func()
}

// Append appends req with its outbox entries, then calls Config.PushNotify when it
// created any.
func (l *outboxLedger) Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error) {
	items, err := l.o.entries(ctx, &req)
	if err != nil {
		return ledger.AppendResult{}, err
	}
	if len(items) > 0 {
		req.Entries = append(slices.Clip(req.Entries), items...)
	}
	res, err := l.Ledger.Append(ctx, req)
	if err == nil && len(items) > 0 && l.notify != nil {
		l.notify()
	}
	return res, err
}

// pushEvent is an entry of a request that a notification reports.
type pushEvent struct {
	taskID string
	ev     a2a.Event
}

// mayNotify reports whether e is an entry entryEvent can make a status or artifact event of.
func mayNotify(e *ledger.Entry) bool {
	return e.TaskID != "" && (e.Kind == ledger.KindStatus || e.Kind == ledger.KindReplyChunk || e.Kind == ledger.KindAgentReply)
}

// requestEvents returns the status and artifact events of req's entries whose task is in
// tasks, in order.
func requestEvents(req *ledger.AppendRequest, tasks map[string][]ledger.PushConfig) []pushEvent {
	var out []pushEvent
	for i := range req.Entries {
		e := req.Entries[i]
		if !mayNotify(&e) || len(tasks[e.TaskID]) == 0 {
			continue
		}
		e.ContextID = req.ContextID
		if e.CreatedAt.IsZero() {
			e.CreatedAt = time.Now().UTC()
		}
		if ev, ok := entryEvent(&e); ok && (ev.Status != nil || ev.Artifact != nil) {
			out = append(out, pushEvent{taskID: e.TaskID, ev: ev})
		}
	}
	return out
}

// entries returns the PUSH_OUTBOX entries of req's events: one per event and live
// config of its task (the stored configs, as the PUSH_CONFIG entries of req itself
// change them).
// The configs are read first: an event is decoded (its metadata parsed, its parts
// converted) only for a task that has any, which most turns' tasks do not.
func (o *outbox) entries(ctx context.Context, req *ledger.AppendRequest) ([]ledger.Entry, error) {
	var configs map[string][]ledger.PushConfig
	for i := range req.Entries {
		e := &req.Entries[i]
		if !mayNotify(e) {
			continue
		}
		if _, ok := configs[e.TaskID]; ok {
			continue
		}
		cs, err := o.requestConfigs(ctx, req, e.TaskID)
		if err != nil {
			return nil, err
		}
		if configs == nil {
			configs = map[string][]ledger.PushConfig{}
		}
		configs[e.TaskID] = cs
	}
	var out []ledger.Entry
	for _, pe := range requestEvents(req, configs) {
		cs := configs[pe.taskID]
		for i := range cs {
			e, err := outboxEntry(pe, &cs[i])
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// requestConfigs returns the configs of taskID live once req is stored.
func (o *outbox) requestConfigs(ctx context.Context, req *ledger.AppendRequest, taskID string) ([]ledger.PushConfig, error) {
	live, err := o.configs.live(ctx, req.Owner, taskID)
	if err != nil {
		return nil, err
	}
	if len(live) == 0 && !slices.ContainsFunc(req.Entries, func(e ledger.Entry) bool { return e.Kind == ledger.KindPushConfig }) {
		return nil, nil // the common case: no config, none set by req
	}
	byID := map[string]ledger.PushConfig{}
	for _, c := range live {
		byID[c.ID] = c
	}
	for i := range req.Entries {
		e := &req.Entries[i]
		if e.Kind != ledger.KindPushConfig || e.TaskID != taskID {
			continue
		}
		var c ledger.PushConfig
		if err := ledger.PushRecord(e, &c); err != nil {
			return nil, fmt.Errorf("push config entry: %w", err)
		}
		if c.Deleted {
			delete(byID, c.ID)
		} else {
			byID[c.ID] = c
		}
	}
	return slices.SortedFunc(maps.Values(byID), func(a, b ledger.PushConfig) int { return cmp.Compare(a.ID, b.ID) }), nil
}

// outboxEntry is the PUSH_OUTBOX entry of event pe for config c: a new event id (the
// entry's id), and the payload in c's dialect with the event id in its metadata.
func outboxEntry(pe pushEvent, c *ledger.PushConfig) (ledger.Entry, error) {
	id := uuid.NewString()
	ev := pe.ev
	meta := map[string]any{EventIDKey: id}
	if ev.Status != nil {
		su := *ev.Status
		su.Metadata = meta
		ev.Status = &su
	} else {
		au := *ev.Artifact
		au.Metadata = meta
		ev.Artifact = &au
	}
	d, ct := a2a.V1, contentTypeV1
	if c.Dialect == "0.3" {
		d, ct = a2a.V03, contentTypeV03
	}
	body, err := a2a.EncodeEvent(&ev, d)
	if err != nil {
		return ledger.Entry{}, fmt.Errorf("encode push payload: %w", err)
	}
	rec := ledger.PushOutbox{ConfigID: c.ID, URL: c.URL, Token: c.Token, AuthCredentials: c.AuthCredentials,
		ContentType: ct, Body: body}
	if len(c.AuthSchemes) > 0 {
		rec.AuthScheme = c.AuthSchemes[0]
	}
	return pushLedgerEntry(ledger.KindPushOutbox, pe.taskID, id, rec), nil
}

// PushOutbox returns the outbox the deliverer works from (see [push.Outbox]): Pending
// from the ledger's pending index, Claim through the Locker with a shared store (key
// "push/<taskID>", released at Record), Record as a PUSH_ATTEMPT entry that updates the
// index in its commit. nil when push is disabled (Config.PushGuard nil).
func (r *Runner) PushOutbox() push.Outbox {
	if r.cfg.PushGuard == nil {
		return nil
	}
	return r.outbox
}

// outbox implements push.Outbox over the Runner's ledger, and makes the outbox entries of
// the events the Runner appends (outboxLedger).
type outbox struct {
	store   outboxStore  // the Runner's ledger (appends through outboxLedger); set by New
	configs *pushConfigs // the tasks' live configs
	locks   *leases      // the claims of a shared store (Claim, Record)
	shared  bool         // Config.SharedStore
	log     *slog.Logger

	mu       sync.Mutex
	owners   map[string]string         // delivery id → owner of its conversation (from Pending)
	attempts map[string]int            // delivery id → attempts recorded (from Pending and Record)
	leases   map[string]*locking.Lease // delivery id → claim lease (shared store)
}

func newOutbox(configs *pushConfigs, locks *leases, shared bool, log *slog.Logger) *outbox {
	return &outbox{configs: configs, locks: locks, shared: shared, log: log,
		owners: map[string]string{}, attempts: map[string]int{}, leases: map[string]*locking.Lease{}}
}

// Pending implements push.Outbox.
func (o *outbox) Pending(ctx context.Context, limit int) ([]push.Delivery, error) {
	pp, err := o.store.PendingPush(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("push outbox: %w", err)
	}
	out := make([]push.Delivery, 0, len(pp))
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range pp {
		d, err := delivery(&pp[i])
		if err != nil {
			o.log.WarnContext(ctx, "push outbox: an outbox entry is unreadable; skipped", "seq", pp[i].Entry.Seq, "err", err)
			continue
		}
		o.owners[d.ID] = pp[i].Entry.Owner
		o.attempts[d.ID] = max(o.attempts[d.ID], d.Attempts)
		d.Attempts = o.attempts[d.ID]
		out = append(out, d)
	}
	inTaskOrder(out)
	return out, nil
}

// inTaskOrder keeps the deliveries where they are by task (the task of the oldest
// first) but puts each task's deliveries in Seq order.
func inTaskOrder(ds []push.Delivery) {
	first := map[string]int{}
	for i, d := range ds {
		if _, ok := first[d.TaskID]; !ok {
			first[d.TaskID] = i
		}
	}
	slices.SortStableFunc(ds, func(a, b push.Delivery) int {
		return cmp.Or(cmp.Compare(first[a.TaskID], first[b.TaskID]), cmp.Compare(a.Seq, b.Seq))
	})
}

func delivery(p *ledger.PendingPush) (push.Delivery, error) {
	e := &p.Entry
	var rec ledger.PushOutbox
	if err := ledger.PushRecord(e, &rec); err != nil {
		return push.Delivery{}, err
	}
	return push.Delivery{ID: e.ID, TaskID: e.TaskID, ContextID: e.ContextID, Seq: e.Seq, ConfigID: rec.ConfigID,
		URL: rec.URL, Token: rec.Token, AuthScheme: rec.AuthScheme, AuthCredentials: rec.AuthCredentials,
		ContentType: rec.ContentType, Body: rec.Body, Created: e.CreatedAt, Attempts: p.Attempts, NextAt: p.NextAt}, nil
}

// Claim implements push.Outbox: always true on a single instance; with a shared store,
// true when this instance took the task's push lease (held until Record) and d has no
// final attempt yet.
func (o *outbox) Claim(ctx context.Context, d push.Delivery) (bool, error) {
	if !o.shared {
		return true, nil
	}
	o.mu.Lock()
	_, held := o.leases[d.ID]
	o.mu.Unlock()
	if held {
		return true, nil
	}
	lease, err := o.locks.claim(ctx, "push/"+d.TaskID, d.ID)
	if errors.Is(err, locking.ErrHeld) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("push outbox: claim %s: %w", d.ID, err)
	}
	// The read that found d may predate another instance's final attempt of it (made
	// and released between that read and this claim): with the lease held, check that
	// d is still undelivered, or it would be sent twice.
	if done, err := o.finished(ctx, d); err != nil || done {
		o.locks.release(ctx, lease)
		return false, err
	}
	o.mu.Lock()
	o.leases[d.ID] = lease
	o.mu.Unlock()
	return true, nil
}

// finished reports whether d has a final attempt recorded (by any instance).
func (o *outbox) finished(ctx context.Context, d push.Delivery) (bool, error) {
	_, es, err := o.store.TaskEntries(ctx, d.TaskID)
	if err != nil {
		return false, fmt.Errorf("push outbox: claim %s: %w", d.ID, err)
	}
	for i := range es {
		var a ledger.PushAttempt
		if es[i].Kind == ledger.KindPushAttempt && ledger.PushRecord(&es[i], &a) == nil && a.EventID == d.ID && a.Final {
			return true, nil
		}
	}
	return false, nil
}

// Record implements push.Outbox: it appends the attempt as a PUSH_ATTEMPT entry of the
// task's conversation (after a final one, d is no longer pending), then releases d's
// claim.
func (o *outbox) Record(ctx context.Context, d push.Delivery, a push.Attempt) error {
	defer o.release(ctx, d.ID)
	owner, err := o.owner(ctx, d)
	if err != nil {
		return err
	}
	o.mu.Lock()
	n := max(d.Attempts, o.attempts[d.ID]) + 1
	o.mu.Unlock()
	rec := ledger.PushAttempt{OutboxSeq: d.Seq, EventID: d.ID, Attempt: n, Outcome: string(a.Outcome),
		Final: a.Final(), Status: a.Status, LatencyMs: float64(a.Latency.Microseconds()) / 1000, Error: a.Error}
	if !a.Final() {
		rec.NextAt = a.NextAt.UTC()
	}
	e := pushLedgerEntry(ledger.KindPushAttempt, d.TaskID, "", rec)
	if !a.At.IsZero() {
		e.CreatedAt = a.At
	}
	if _, err := o.store.Append(ctx, ledger.AppendRequest{Owner: owner, ContextID: d.ContextID, Entries: []ledger.Entry{e}}); err != nil {
		return fmt.Errorf("push outbox: record attempt of %s: %w", d.ID, err)
	}
	o.mu.Lock()
	if a.Final() {
		delete(o.owners, d.ID)
		delete(o.attempts, d.ID)
	} else {
		o.attempts[d.ID] = n
	}
	o.mu.Unlock()
	return nil
}

// owner returns the owner of d's conversation: remembered from Pending, or read from
// the task index.
func (o *outbox) owner(ctx context.Context, d push.Delivery) (string, error) {
	o.mu.Lock()
	owner, ok := o.owners[d.ID]
	o.mu.Unlock()
	if ok {
		return owner, nil
	}
	conv, _, err := o.store.TaskEntries(ctx, d.TaskID)
	if err != nil {
		return "", fmt.Errorf("push outbox: task of %s: %w", d.ID, err)
	}
	return conv.Owner, nil
}

func (o *outbox) release(ctx context.Context, id string) {
	o.mu.Lock()
	lease := o.leases[id]
	delete(o.leases, id)
	o.mu.Unlock()
	if lease != nil {
		o.locks.release(ctx, lease)
	}
}
