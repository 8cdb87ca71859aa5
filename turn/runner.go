package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/conversations/contextid"
	"github.com/a2a-gateway/gateway/internal/logctx"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/projection"
)

// Config configures a Runner. The zero value is usable.
type Config struct {
	// FinalizeTimeout bounds the appends and lease release that end a turn, which run
	// without the turn's cancellation. 0: 10s.
	FinalizeTimeout time.Duration
	// BusyWait is how long a send to a busy context waits for the running task to end
	// before it is refused with CONTEXT_BUSY. 0: refuse at once (the "reject" policy).
	BusyWait time.Duration
	// Policy is the projection policy (history limit, budgets, operator policy); the
	// peer is filled in per turn. Its zero value gives the agent no history.
	Policy projection.Policy

	// Limits; 0 means no limit of that kind. A breach is -32602 invalid params
	// naming the limit, and nothing is stored.
	MaxParts        int // parts per message
	MaxPartBytes    int // bytes of one part's content (text, data or file bytes)
	MaxMessageBytes int // bytes of all the message's parts together
	// MaxStreamsPerPeer bounds the streams (SSE and WebSocket subscriptions) one peer has
	// open at once; beyond it a stream is refused with RATE_LIMITED.
	MaxStreamsPerPeer int

	// RateLimit admits each peer's requests; nil admits all.
	RateLimit RateLimiter
	// Observe receives measurements; nil observes nothing.
	Observe Observer
}

// Runner runs turns and serves the A2A methods over the ledger.
type Runner struct {
	cfg   Config
	led   Ledger
	locks Locker
	agent agent.Agent
	log   *slog.Logger

	base    context.Context // parent of every turn; canceled by Close after its deadline
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closing atomic.Bool

	mu   sync.Mutex
	live map[string]*liveTask // running tasks by id

	feeds feeds // live events by context

	// Rejected requests are audited off the request path, so a busy reply never waits
	// for an fsync. The queue is bounded (a flood of busy sends drops audits, counted);
	// one goroutine, owned by the Runner, writes them.
	audits        chan auditItem
	auditsDone    chan struct{}
	auditsDropped atomic.Uint64
	lastDropWarn  time.Time // guarded by mu

	obs      Observer
	prefixes prefixTracker

	streamsMu sync.Mutex     // guards streams only; never held with mu
	streams   map[string]int // open streams per peer
}

// auditQueue bounds the audits waiting to be written: 1,024 rejected requests, a few
// hundred KiB at most.
const auditQueue = 1024

var _ a2a.Handler = (*Runner)(nil)

// errShutdown is the cause of a turn canceled because the gateway stopped.
var errShutdown = errors.New("gateway shutting down")

// errCanceledByPeer is the cause of a turn canceled with CancelTask.
var errCanceledByPeer = errors.New("canceled by the peer")

// New returns a Runner. Close it to stop its turns.
func New(cfg Config, led Ledger, locks Locker, ag agent.Agent, logger *slog.Logger) *Runner {
	if cfg.FinalizeTimeout <= 0 {
		cfg.FinalizeTimeout = 10 * time.Second
	}
	base, cancel := context.WithCancel(context.Background())
	r := &Runner{
		cfg: cfg, led: led, locks: locks, agent: ag,
		log:  logger.With("component", "turn"),
		base: base, cancel: cancel,
		live:       map[string]*liveTask{},
		audits:     make(chan auditItem, auditQueue),
		auditsDone: make(chan struct{}),
		obs:        cfg.Observe,
		streams:    map[string]int{},
	}
	if r.obs == nil {
		r.obs = noObserver{}
	}
	go r.writeAudits(r.audits) // exits when Close closes the queue and it is drained
	return r
}

// auditItem is a queued audit; ifExists skips it when its conversation does not exist.
type auditItem struct {
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
			r.log.Warn("audit of rejected requests not recorded", "entries", len(it.req.Entries), "err", err)
		}
	}
}

// audit queues an audit-only record of a rejected request; it never blocks. When the queue
// is full the audit is dropped and counted; the warning says so at most every 10 seconds.
func (r *Runner) audit(req auditItem) {
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
			r.log.Warn("audit queue full: some rejected requests are not recorded", "dropped_total", n)
		}
	}
}

// AuditsDropped returns how many audits of rejected requests were dropped because the
// queue was full.
func (r *Runner) AuditsDropped() uint64 { return r.auditsDropped.Load() }

// Close stops accepting turns, waits for the running ones until ctx is done, then cancels
// them and waits for them to record their end. It returns ctx.Err() if the deadline hit.
func (r *Runner) Close(ctx context.Context) error {
	r.closing.Store(true)
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }() // exits when every turn has ended
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		r.cancel()
		<-done
	}
	r.cancel()
	r.mu.Lock()
	if r.audits != nil {
		close(r.audits)
		r.audits = nil
	}
	r.mu.Unlock()
	<-r.auditsDone
	return err
}

// Running returns the number of turns in progress.
func (r *Runner) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.live)
}

// SendMessage implements a2a.Handler.
func (r *Runner) SendMessage(ctx context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
	if err := r.admit(ctx); err != nil {
		return a2a.SendResult{}, err
	}
	lt, first, _, err := r.start(ctx, p, false)
	if err != nil {
		return a2a.SendResult{}, err
	}
	if p.Config.ReturnImmediately {
		applyHistoryLength(&first, p.Config.HistoryLength)
		return a2a.SendResult{Task: &first}, nil
	}
	select {
	case <-lt.finished:
	case <-ctx.Done():
		return a2a.SendResult{}, ctx.Err()
	}
	if lt.stored != nil { // a new task: its entries are exactly what this turn appended
		if err := r.inflate(ctx, lt.stored); err != nil {
			return a2a.SendResult{}, err
		}
		t := foldTask(ledger.Conversation{ContextID: lt.contextID, Owner: lt.owner}, lt.id, lt.stored)
		applyHistoryLength(&t, p.Config.HistoryLength)
		return a2a.SendResult{Task: &t}, nil
	}
	t, err := r.loadTask(ctx, PeerFrom(ctx), lt.id, p.Config.HistoryLength)
	if err != nil {
		return a2a.SendResult{}, err
	}
	return a2a.SendResult{Task: t}, nil
}

// SendStreamingMessage implements a2a.Handler.
func (r *Runner) SendStreamingMessage(ctx context.Context, p *a2a.SendParams) (a2a.Stream, error) {
	if err := r.admit(ctx); err != nil {
		return nil, err
	}
	release, err := r.openStream(ctx)
	if err != nil {
		return nil, err
	}
	_, _, es, err := r.start(ctx, p, true)
	if err != nil {
		release()
		return nil, err
	}
	es.release = release
	return es, nil
}

// start validates a send, takes the context's lease, persists the inbound message and
// starts the turn. On return without error the message is durable. With watch it also
// returns the task's event stream, joined before the first append so it misses nothing.
func (r *Runner) start(ctx context.Context, p *a2a.SendParams, watch bool) (*liveTask, a2a.Task, *eventStream, error) {
	if r.closing.Load() {
		return nil, a2a.Task{}, nil, ErrUnavailable()
	}
	started := time.Now()
	peer := PeerFrom(ctx)
	m := p.Message
	continuing := false
	if m.TaskID != "" {
		conv, entries, err := r.led.TaskEntries(ctx, m.TaskID)
		if errors.Is(err, ledger.ErrNotFound) || (err == nil && conv.Owner != peer) {
			return nil, a2a.Task{}, nil, a2a.Errorf(a2a.ErrTaskNotFound, "task %q not found", m.TaskID)
		}
		if err != nil {
			return nil, a2a.Task{}, nil, err
		}
		if m.ContextID == "" {
			m.ContextID = conv.ContextID
		} else if m.ContextID != conv.ContextID {
			return nil, a2a.Task{}, nil, a2a.InvalidParams("message.contextId", "does not match the context of task %q", m.TaskID)
		}
		st := foldTask(conv, m.TaskID, entries).Status.State
		switch {
		case st.Terminal():
			r.auditRejected(peer, &m, "TASK_TERMINAL", m.TaskID)
			return nil, a2a.Task{}, nil, a2a.Errorf(a2a.ErrUnsupportedOperation,
				"task %q is %s and accepts no more messages; send without taskId to start a new task in the same context", m.TaskID, st)
		case st != a2a.StateInputRequired:
			// still running: the lease below answers CONTEXT_BUSY
		}
		continuing = true
	}
	if m.ContextID == "" {
		m.ContextID = contextid.New()
	} else if err := contextid.Validate(m.ContextID); err != nil {
		return nil, a2a.Task{}, nil, protocolError(err)
	}
	if err := r.checkLimits(&m); err != nil {
		return nil, a2a.Task{}, nil, err
	}
	// a credential a peer pasted is never stored, shown to the agent or echoed back.
	m.Parts, _ = redactParts(m.Parts)
	m.Metadata, _ = redactMeta(m.Metadata)
	if !hasContent(m.Parts) {
		r.auditRejected(peer, &m, "EMPTY_MESSAGE", "")
		return nil, a2a.Task{}, nil, a2a.InvalidParams("message.parts", "the message has no content (all text parts are empty)")
	}
	taskID := m.TaskID
	if taskID == "" {
		taskID = newTaskID()
	}
	key := contextid.Key(peer, m.ContextID)
	lease, err := r.acquire(ctx, key, taskID)
	if err != nil {
		return nil, a2a.Task{}, nil, r.refuse(ctx, peer, &m, err)
	}
	userEntry := ledger.Entry{
		TaskID: taskID, Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted,
		Visibility: ledger.VisibilityModel, Actor: peer, MessageID: m.MessageID,
		Role: ledger.RoleUser, Parts: toLedgerParts(m.Parts), Metadata: marshalMeta(m.Metadata),
	}
	// H-1: the history is read before the message is appended, so the message is never in
	// its own history; only the original text is stored.
	var prep prepared
	if usesContext(r.agent) {
		hist, err := r.readHistory(ctx, peer, m.ContextID, 0)
		if err == nil {
			prep, err = r.prepare(hist, peer, userEntry)
		}
		if err == nil {
			prev, stable := r.prefixes.observe(key, prep.prompt)
			r.obs.Projection(len(prep.prompt), prev, stable)
		}
		if err != nil {
			r.releaseLease(lease)
			return nil, a2a.Task{}, nil, err
		}
	} else {
		prep.prompt = m.Text()
	}
	entries := []ledger.Entry{
		userEntry,
		{TaskID: taskID, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, Actor: "gateway", State: string(a2a.StateWorking)},
	}
	var es *eventStream
	if watch {
		es = r.newEventStream(peer, m.ContextID, taskID, 0, nil, nil)
		es.replaying = false // everything of this turn comes after the join
	}
	fd := r.feeds.hold(key)
	res, err := r.led.Append(ctx, ledger.AppendRequest{Owner: peer, ContextID: m.ContextID, BeginTurn: true, Entries: entries})
	if err != nil {
		r.feeds.unhold(key, fd)
		if es != nil {
			es.Close()
		}
		r.releaseLease(lease)
		if errors.Is(err, ledger.ErrInvalid) {
			return nil, a2a.Task{}, nil, protocolError(err)
		}
		return nil, a2a.Task{}, nil, fmt.Errorf("append inbound message: %w", err)
	}
	now := res.Entries[0].CreatedAt
	lt := newLiveTask(taskID, m.ContextID, peer)
	if es != nil {
		es.ended = lt.finished
	}
	first := a2a.Task{
		ID: taskID, ContextID: m.ContextID,
		Status:  a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: now},
		History: []a2a.Message{{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: taskID, Role: a2a.RoleUser, Parts: m.Parts, Metadata: m.Metadata}},
	}
	if continuing {
		first.Status.State = a2a.StateWorking
	}
	r.publish(ctx, peer, m.ContextID, res.Entries)

	// The turn outlives the request (it runs under the runner's cancellation) but logs
	// as part of it: the request's log scope (request_id, method) is carried over.
	tctx, cancel := context.WithCancelCause(logctx.WithAttrs(logctx.Carry(r.base, ctx),
		slog.String(logctx.KeyContextID, m.ContextID), slog.String(logctx.KeyTaskID, taskID)))
	lt.cancel = cancel
	r.mu.Lock()
	r.live[taskID] = lt
	r.mu.Unlock()
	tr := &turnRun{r: r, lt: lt, lease: lease, epoch: res.Epoch, peer: peer, text: m.Text(), prep: prep, started: started,
		key: key, feed: fd, chunks: chunks{wake: make(chan struct{}, 1)}}
	if !continuing {
		tr.stored = append(tr.stored, res.Entries...)
	}
	tr.keepStored = !continuing
	r.wg.Go(func() { tr.run(tctx) }) // exits when the agent is done and the end is recorded
	return lt, first, es, nil
}

// acquire takes the context's lease; with a BusyWait it waits for a busy context to free
// up until the bound, then reports it held.
func (r *Runner) acquire(ctx context.Context, key, holder string) (*locking.Lease, error) {
	t0 := time.Now()
	lease, err := r.locks.Acquire(ctx, key, holder)
	r.obs.LeaseAcquire(time.Since(t0), err)
	if err == nil || r.cfg.BusyWait <= 0 || !errors.Is(err, locking.ErrHeld) {
		return lease, err
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.BusyWait)
	defer cancel()
	for {
		if werr := r.locks.Wait(wctx, key); werr != nil {
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case wctx.Err() != nil:
				return nil, err // still held at the bound: report the last holder
			}
			return nil, werr // the lock service failed: fail closed
		}
		lease, err = r.locks.Acquire(ctx, key, holder)
		if err == nil || !errors.Is(err, locking.ErrHeld) {
			return lease, err
		}
	}
}

func hasContent(ps []a2a.Part) bool {
	for _, p := range ps {
		if p.Kind != a2a.PartText || strings.TrimSpace(p.Text) != "" {
			return true
		}
	}
	return false
}

// refuse turns a failed Acquire into the caller's error; a busy context records the
// rejected request as an AUDIT_ONLY entry, which never enters the conversation.
func (r *Runner) refuse(ctx context.Context, peer string, m *a2a.Message, err error) error {
	var held *locking.HeldError
	if !errors.As(err, &held) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, locking.ErrClosed) {
			return ErrUnavailable()
		}
		r.log.WarnContext(ctx, "lease unavailable", "context_key", contextid.Key(peer, m.ContextID), "err", err)
		return a2a.Errorf(a2a.ErrLockUnavailable, "the lock service is unavailable; retry later")
	}
	r.audit(auditItem{req: ledger.AppendRequest{Owner: peer, ContextID: m.ContextID, Entries: []ledger.Entry{auditEntry(peer, m, "CONTEXT_BUSY", held.Holder)}}})
	return r.busy(m.ContextID, held.Holder)
}

// busy is the CONTEXT_BUSY error of a request refused because task holder (a task id;
// "" when the lease service could not say, e.g. the lease expired just then) runs in
// contextID. It counts the refusal.
func (r *Runner) busy(contextID, holder string) error {
	r.obs.Busy()
	running := "another task is running"
	meta := map[string]string{"contextId": contextID}
	if holder != "" {
		running = "task " + holder + " is running"
		meta["taskId"] = holder
	}
	return &a2a.Error{
		Err:      a2a.ErrContextBusy,
		Message:  fmt.Sprintf("context %q is busy: %s; retry when it completes", contextID, running),
		Metadata: meta,
	}
}

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
func (r *Runner) auditRejected(peer string, m *a2a.Message, reason, taskID string) {
	if m.ContextID == "" || contextid.Validate(m.ContextID) != nil {
		return
	}
	r.audit(auditItem{req: ledger.AppendRequest{Owner: peer, ContextID: m.ContextID, Entries: []ledger.Entry{auditEntry(peer, m, reason, taskID)}}, ifExists: true})
}

func (r *Runner) releaseLease(l *locking.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.FinalizeTimeout)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		r.log.Warn("lease release failed; it expires by itself", "err", err)
	}
}

// ErrUnavailable returns the error of a request refused during shutdown.
func ErrUnavailable() error {
	return a2a.Errorf(a2a.ErrUnavailable, "the gateway is shutting down; retry on another instance or later")
}

// turnRun is one running turn, owned by the goroutine started in start.
type turnRun struct {
	r     *Runner
	lt    *liveTask
	lease *locking.Lease
	epoch uint64
	peer  string
	text  string
	prep  prepared // what the agent is given

	started time.Time // when the send arrived
	key     string    // the context's key
	feed    *feed     // the context's live feed, held while the turn runs

	chunks     chunks
	chunkErr   error // set by the chunk writer before it exits
	chunksMade int   // REPLY_CHUNK entries stored
	stored     []ledger.Entry
	keepStored bool // this turn created the task: lt.stored gets every entry
	artifactID string
}

func (tr *turnRun) run(ctx context.Context) {
	r, lt := tr.r, tr.lt
	defer func() {
		r.releaseLease(tr.lease)
		r.feeds.unhold(tr.key, tr.feed)
		r.mu.Lock()
		delete(r.live, lt.id)
		r.mu.Unlock()
		close(lt.finished)
	}()
	tr.artifactID = uuid.NewString()
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() { tr.writeChunks(stop) }) // exits when stop is closed (or a chunk append failed)
	stopWriter := func() {
		if stop != nil {
			close(stop)
			writer.Wait()
			stop = nil
		}
	}
	defer stopWriter()
	defer func() {
		if p := recover(); p != nil {
			r.log.ErrorContext(ctx, "agent panicked", "task_id", lt.id, "panic", p)
			stopWriter()
			tr.finish(ctx, fmt.Errorf("%w: panic: %v", agent.ErrBackend, p), agent.Result{})
		}
	}()
	// A lost lease cancels the turn: another instance may now run this context.
	if lost := tr.lease.Lost(); lost != nil {
		watchDone := make(chan struct{})
		var watch sync.WaitGroup
		watch.Go(func() { // exits when the lease is lost or the turn ends
			select {
			case <-lost:
				lt.cancel(locking.ErrLost)
			case <-watchDone:
			}
		})
		defer func() { close(watchDone); watch.Wait() }()
	}
	emit := func(c string) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		tr.chunks.add(c)
		return nil
	}
	t0 := time.Now()
	res, err := r.agent.Reply(ctx, agent.Turn{
		ContextID: lt.contextID, TaskID: lt.id, Peer: tr.peer, Text: tr.text,
		Prompt: tr.prep.prompt, Request: tr.prep.request, UpstreamContextID: tr.prep.upstream, UpstreamTaskID: tr.prep.upstreamTask,
	}, emit)
	r.obs.AgentDone(time.Since(t0), err)
	stopWriter()
	if err == nil && tr.chunkErr != nil {
		err = tr.chunkErr
	}
	tr.finish(ctx, err, res)
}

// writeChunks stores the reply's pending text as REPLY_CHUNK entries while someone
// watches the context, and publishes them. It exits when stop is closed, or after a
// failed append (recorded in chunkErr; the turn is canceled).
func (tr *turnRun) writeChunks(stop <-chan struct{}) {
	for {
		watched, joined := tr.feed.watched()
		if watched {
			if text := tr.chunks.take(false); text != "" {
				if err := tr.appendChunk(text, false); err != nil {
					tr.chunkErr = err
					tr.lt.cancel(err)
					return
				}
				continue
			}
		}
		select {
		case <-tr.chunks.wake:
		case <-joined:
		case <-stop:
			return
		}
	}
}

// chunkEntry is a REPLY_CHUNK entry of the turn's reply.
func (tr *turnRun) chunkEntry(text string, last bool) ledger.Entry {
	meta := map[string]any{metaArtifactID: tr.artifactID}
	if tr.chunksMade > 0 {
		meta[metaAppend] = true
	}
	if last {
		meta[metaLastChunk] = true
	}
	return ledger.Entry{
		TaskID: tr.lt.id, Kind: ledger.KindReplyChunk, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityAudit,
		Actor: "agent", Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}, Metadata: marshalMeta(meta),
	}
}

// appendChunk stores one chunk in the turn's epoch and publishes it.
func (tr *turnRun) appendChunk(text string, last bool) error {
	r := tr.r
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.FinalizeTimeout)
	defer cancel()
	res, err := r.led.Append(ctx, ledger.AppendRequest{Owner: tr.peer, ContextID: tr.lt.contextID, Epoch: tr.epoch,
		Entries: []ledger.Entry{tr.chunkEntry(text, last)}})
	if err != nil {
		return fmt.Errorf("store a reply chunk: %w", err)
	}
	tr.chunksMade++
	tr.keep(res.Entries)
	r.publish(ctx, tr.peer, tr.lt.contextID, res.Entries)
	return nil
}

func (tr *turnRun) keep(stored []ledger.Entry) {
	if tr.keepStored {
		tr.stored = append(tr.stored, stored...)
	}
}

// finish records the end of the turn (reply, status) and publishes the final status.
func (tr *turnRun) finish(ctx context.Context, agentErr error, res agent.Result) {
	r, lt := tr.r, tr.lt
	reply, rest := tr.chunks.reply()
	state := a2a.StateCompleted
	var statusText string
	switch {
	case agentErr != nil && errors.Is(context.Cause(ctx), errCanceledByPeer):
		state = a2a.StateCanceled
	case agentErr != nil && errors.Is(context.Cause(ctx), ledger.ErrFenced):
		state, statusText = a2a.StateFailed, "a newer turn took over this context; this turn's reply was not stored"
	case agentErr != nil && errors.Is(context.Cause(ctx), locking.ErrLost):
		state, statusText = a2a.StateFailed, "the gateway lost this context's lease during the turn; send the message again"
		r.log.WarnContext(ctx, "lease lost during a turn; canceled it", "task_id", lt.id)
	case agentErr != nil && ctx.Err() != nil:
		state, statusText = a2a.StateFailed, "the gateway shut down during this turn; send the message again"
	case agentErr != nil:
		state, statusText = a2a.StateFailed, "the agent failed to reply; the operator's log has the detail"
		r.log.WarnContext(ctx, "agent failed", "task_id", lt.id, "err", agentErr)
	case res.InputRequired:
		state = a2a.StateInputRequired
	}
	var entries []ledger.Entry
	if tr.chunksMade > 0 {
		entries = append(entries, tr.chunkEntry(rest, true))
	}
	if reply != "" || agentErr == nil {
		meta := map[string]any{metaArtifactID: tr.artifactID}
		if tr.chunksMade > 0 {
			meta[metaChunked] = true
		}
		if agentErr != nil {
			meta[metaPartial] = true
		}
		if res.UpstreamContextID != "" {
			meta[metaUpstream] = res.UpstreamContextID
		}
		if res.UpstreamTaskID != "" {
			meta[metaUpstreamTask] = res.UpstreamTaskID
		}
		entries = append(entries, ledger.Entry{
			TaskID: lt.id, Kind: ledger.KindAgentReply, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel,
			Actor: "agent", MessageID: uuid.NewString(), Role: ledger.RoleAgent,
			Parts: []ledger.Part{{Kind: ledger.PartText, Text: reply}}, Metadata: marshalMeta(meta),
		})
	}
	status := ledger.Entry{TaskID: lt.id, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, Actor: "gateway", State: string(state), MessageID: uuid.NewString()}
	switch {
	case statusText != "":
		status.Parts = []ledger.Part{{Kind: ledger.PartText, Text: statusText}}
		if agentErr != nil {
			entries = append(entries, ledger.Entry{TaskID: lt.id, Kind: ledger.KindError, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit, Actor: "gateway", Parts: []ledger.Part{{Kind: ledger.PartText, Text: statusText}}})
		}
	case state == a2a.StateInputRequired:
		status.Parts = []ledger.Part{{Kind: ledger.PartText, Text: reply}}
	}
	entries = append(entries, status)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.FinalizeTimeout)
	defer cancel()
	stored, err := r.led.Append(fctx, ledger.AppendRequest{Owner: tr.peer, ContextID: lt.contextID, Epoch: tr.epoch, Entries: entries})
	if err != nil {
		text := "internal error: the reply could not be stored"
		if errors.Is(err, ledger.ErrFenced) {
			text = "a newer turn took over this context; this turn's reply was not stored"
			r.log.WarnContext(fctx, "turn fenced off: a newer holder owns the context", "task_id", lt.id)
		} else {
			r.log.ErrorContext(fctx, "recording the end of a turn failed", "task_id", lt.id, "err", err)
		}
		// Close the task without touching the conversation: an audit-only status, so the
		// task does not stay "working" and no reply enters a newer turn.
		failed, aerr := r.led.Append(fctx, ledger.AppendRequest{Owner: tr.peer, ContextID: lt.contextID, Entries: []ledger.Entry{{
			TaskID: lt.id, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit,
			Actor: "gateway", State: string(a2a.StateFailed), MessageID: uuid.NewString(),
			Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}},
		}}})
		if aerr != nil {
			r.log.ErrorContext(fctx, "recording a turn's failure failed; its streams end without a final status", "task_id", lt.id, "err", aerr)
		} else {
			tr.keep(failed.Entries)
			r.publish(fctx, tr.peer, lt.contextID, failed.Entries)
		}
		if tr.keepStored {
			lt.stored = tr.stored
		}
		r.obs.TurnDone(string(a2a.StateFailed), time.Since(tr.started))
		return
	}
	r.obs.TurnDone(string(state), time.Since(tr.started))
	tr.keep(stored.Entries)
	if tr.keepStored {
		lt.stored = tr.stored
	}
	r.publish(fctx, tr.peer, lt.contextID, stored.Entries)
}

// newTaskID returns a time-ordered (version 7) UUID: new tasks land at the right edge of
// the ledger's task index, so a group commit touches one index page, not one per task.
func newTaskID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
