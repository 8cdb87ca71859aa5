package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/feed"
	"github.com/a2a-gateway/gateway/internal/genmap"
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
	// before it is refused with CONTEXT_BUSY. 0: refuse at once (the "reject" policy),
	// except while the running turn stores its end and gives the lease up: that short
	// handover is waited for in either policy (see awaitEnding).
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
	// open at once; beyond it a stream is refused with RATE_LIMITED. (The peers' request
	// rate is limited before a request reaches the Runner: cmd/gateway's ratelimit.go.)
	MaxStreamsPerPeer int

	// Observe receives measurements; nil observes nothing.
	Observe Observer
	// Tools gives each turn the tools its agent may call; nil offers none.
	Tools ToolBox
	// MaxToolCalls and ToolTime bound a turn's tool calls (agent.Turn's fields; 0: the
	// agent's defaults).
	MaxToolCalls int
	ToolTime     time.Duration

	// SharedStore: the ledger is shared with other instances (ledger/postgres), which
	// announce what they commit through [Runner.Announce]. A task stream then follows a
	// task running on another instance, and a live stream that sees a gap in seq catches
	// up from the store first. A turn stores its reply's chunks while a reader here or on
	// another instance watches the context (see SignalWatch).
	SharedStore bool
	// SignalWatch (SharedStore only; nil: none) tells every instance that a subscriber
	// here (conversations/subscribe, tasks/resubscribe) follows the conversation (owner,
	// contextID): each instance passes it to [Runner.WatchedElsewhere]. A subscriber has
	// it called (by one goroutine of the Runner's, so that no stream waits for it) when it
	// starts and every watchRefresh while it reads. A signal lost or late only
	// delays the reply's text: a turn that stored no chunk stores the whole reply at its end.
	SignalWatch func(ctx context.Context, owner, contextID string) error
	// LeaseTTL is the Locker's lease lifetime. With SharedStore and a positive LeaseTTL
	// the Runner sweeps every LeaseTTL for tasks that an instance left running when it
	// stopped (their lease has expired) and marks them failed (see Recover): such a task
	// is recovered within about twice LeaseTTL of the stop. A context kept busy by new
	// turns is not swept (its lease is held): there the first turn that takes the lease
	// marks the task failed as it begins (planBegin), within about LeaseTTL. 0: no sweep.
	LeaseTTL time.Duration

	// PushGuard enables push notifications (issue #20) and checks every webhook URL a
	// peer sets. nil: push is not supported (the push methods and a send with a push
	// config answer PUSH_NOTIFICATION_NOT_SUPPORTED, -32003). See push.go and outbox.go.
	PushGuard PushGuard
	// PushNotify, if set, is called after each commit that created outbox entries (the
	// deliverer's wake-up). It must not block.
	PushNotify func()
	// MaxPushConfigsPerTask and MaxPushConfigsPerPeer bound the live push configs of a
	// task and of a peer; beyond them a new config is refused with invalid params and
	// nothing is stored. 0: 10 and 1000.
	MaxPushConfigsPerTask int
	MaxPushConfigsPerPeer int
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
	// handovers holds, by context key, the turns that gave their lease up on ending
	// (turnRun.handOver) and have not yet published their end and left: the next turn of
	// that context waits for the channel to close (awaitHandover).
	handovers map[string]chan struct{}

	feeds feed.Feeds // live events by context

	// Rejected requests are audited off the request path, so a busy reply never waits
	// for an fsync. The queue is bounded (a flood of busy sends drops audits, counted);
	// one goroutine, owned by the Runner, writes them.
	audits        chan auditItem
	auditsDone    chan struct{}
	auditsDropped atomic.Uint64
	lastDropWarn  time.Time // guarded by mu

	obs      Observer
	prefixes prefixTracker
	seen     latestSeen // the latest messageId stored per conversation (retry.go)

	sweepDone chan struct{} // closed when the recovery sweep has returned; already closed without one

	outbox *outbox // the push outbox; nil when push is disabled (outbox.go)

	// Watch signals of subscribers (Config.SignalWatch), sent by one goroutine owned by
	// the Runner (sendWatchSignals) so that no stream waits for them; signalsDone is
	// closed when it has returned (already closed without one).
	watchSignals chan watchSignal
	signalsDone  chan struct{}

	streamsMu sync.Mutex     // guards streams only; never held with mu
	streams   map[string]int // open streams per peer
}

// auditQueue bounds the audits waiting to be written: 1,024 rejected requests, a few
// hundred KiB at most.
const auditQueue = 1024

var _ a2a.Handler = (*Runner)(nil)

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
		seen:       latestSeen{genmap.Map[seenMessage]{Max: latestSeenMax}},
		handovers:  map[string]chan struct{}{},
		audits:     make(chan auditItem, auditQueue),
		auditsDone: make(chan struct{}),
		obs:        cfg.Observe,
		streams:    map[string]int{},
	}
	if r.obs == nil {
		r.obs = noObserver{}
	}
	if cfg.PushGuard != nil {
		r.led = &outboxLedger{Ledger: led, r: r} // outbox.go
		r.outbox = newOutbox(r)
	}
	go r.writeAudits(r.audits) // exits when Close closes the queue and it is drained
	r.sweepDone = make(chan struct{})
	r.signalsDone = make(chan struct{})
	if cfg.SharedStore && cfg.SignalWatch != nil {
		r.watchSignals = make(chan watchSignal, watchQueue)
		go r.sendWatchSignals() // exits when Close cancels r.base
	} else {
		close(r.signalsDone)
	}
	if cfg.SharedStore && cfg.LeaseTTL > 0 {
		go r.sweepRecover(cfg.LeaseTTL) // exits when Close cancels r.base
	} else {
		close(r.sweepDone)
	}
	return r
}

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

// Close stops accepting turns, waits for the running ones until ctx is done, then cancels
// them and waits for them to record their end. It returns ctx.Err() if the deadline hit.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closing.Store(true) // under mu: every turn enter admitted is in r.wg now
	r.mu.Unlock()
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
	<-r.sweepDone
	<-r.signalsDone
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

// SendMessage implements a2a.Handler. Its errors are protocol errors (see protocolError):
// invalid params naming the field, TASK_NOT_FOUND, UNSUPPORTED_OPERATION for an ended
// task, CONTEXT_BUSY, UNAVAILABLE during shutdown; a stream, RATE_LIMITED beyond
// MaxStreamsPerPeer.
func (r *Runner) SendMessage(ctx context.Context, p *a2a.SendParams) (_ a2a.SendResult, err error) {
	defer func() { err = protocolError(err) }()
	peer, err := caller(ctx)
	if err != nil {
		return a2a.SendResult{}, err
	}
	acc, err := r.start(ctx, peer, p, false)
	if err != nil {
		return a2a.SendResult{}, err
	}
	if acc.retryTask != "" {
		return r.retryAnswer(ctx, peer, p, acc.retryTask)
	}
	if p.Config.ReturnImmediately {
		applyHistoryLength(&acc.first, p.Config.HistoryLength)
		return a2a.SendResult{Task: &acc.first}, nil
	}
	lt := acc.lt
	select {
	case <-lt.finished:
	case <-ctx.Done():
		return a2a.SendResult{}, ctx.Err()
	}
	if lt.unrecorded != nil {
		return a2a.SendResult{}, lt.unrecorded
	}
	if lt.message != nil { // the agent answered with a Message, not a task's output
		return r.messageResult(ctx, lt)
	}
	if lt.stored != nil { // a new task: its entries are exactly what this turn appended
		if err := r.inflate(ctx, lt.stored); err != nil {
			return a2a.SendResult{}, err
		}
		t := foldTask(ledger.Conversation{ContextID: lt.contextID, Owner: lt.owner}, lt.id, lt.stored)
		applyHistoryLength(&t, p.Config.HistoryLength)
		return a2a.SendResult{Task: &t}, nil
	}
	t, err := r.loadTask(ctx, peer, lt.id, p.Config.HistoryLength)
	if err != nil {
		return a2a.SendResult{}, err
	}
	return a2a.SendResult{Task: t}, nil
}

// SendStreamingMessage implements a2a.Handler. Its errors are those of SendMessage.
func (r *Runner) SendStreamingMessage(ctx context.Context, p *a2a.SendParams) (_ a2a.Stream, err error) {
	defer func() { err = protocolError(err) }()
	peer, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	release, err := r.openStream(peer)
	if err != nil {
		return nil, err
	}
	acc, err := r.start(ctx, peer, p, true)
	if err != nil || acc.retryTask != "" {
		release()
	}
	switch {
	case err != nil:
		return nil, err
	case acc.retryTask != "":
		return r.retryStream(ctx, peer, p, acc.retryTask)
	}
	acc.es.release = release
	return acc.es, nil
}

// accepted is a send that start made durable, with its turn running, or a retried send
// (retry.go): then only retryTask is set.
type accepted struct {
	lt        *liveTask
	first     a2a.Task     // the task as it stands once the message is stored
	es        *eventStream // the task's events, when start was asked to watch
	retryTask string       // the task of the message this send repeats; nothing was stored
}

// inbound is a send that passed validation: the message as it is stored (redacted, with
// its contextId), the task it starts or continues, and the context's key.
type inbound struct {
	peer       string
	m          a2a.Message
	taskID     string
	key        string
	continuing bool      // m continues a task parked on input-required
	started    time.Time // when the send arrived
	retryTask  string    // m repeats a message of this ended task (retry.go)
}

// start validates a send of peer's, takes the context's lease, persists the inbound message and
// starts the turn. On return without error the message is durable and the turn owns the
// lease and the feed hold. With watch it also returns the task's event stream, joined
// before the first append so it misses nothing. A retried send (retry.go; found while a
// turn holds the lease, or by the append's Dedup check) returns with only
// out.retryTask set: nothing stored, no lease held.
//
// Every resource start takes is pushed on undo as it is taken; one deferred call releases
// them in reverse order when start fails, so no failure path can forget one.
func (r *Runner) start(ctx context.Context, peer string, p *a2a.SendParams, watch bool) (out *accepted, err error) {
	if r.closing.Load() {
		return nil, errShutdown
	}
	in, err := r.newInbound(ctx, peer, p.Message)
	switch {
	case err != nil:
		return nil, err
	case in.retryTask != "":
		return &accepted{retryTask: in.retryTask}, nil
	}
	pushEntries, err := r.sendPushConfig(ctx, in, p.Config.Push) // push.go
	if err != nil {
		return nil, err
	}
	var undo []func()
	defer func() {
		if err != nil || out.retryTask != "" {
			for _, release := range slices.Backward(undo) {
				release()
			}
		}
	}()
	lease, retry, err := r.takeLease(ctx, in)
	switch {
	case err != nil:
		return nil, err
	case retry != "":
		return &accepted{retryTask: retry}, nil
	}
	undo = append(undo, func() { r.releaseLease(ctx, lease) })
	user := userEntry(in)
	tr := &turnRun{r: r, lease: lease, peer: in.peer, text: in.m.Text(), messageID: in.m.MessageID, started: in.started, key: in.key,
		chunks: chunks{wake: make(chan struct{}, 1)}}
	if tr.prep, err = r.prepareTurn(ctx, in, user); err != nil {
		return nil, err
	}
	acc := &accepted{}
	if watch {
		acc.es = r.newEventStream(in.peer, in.m.ContextID, in.taskID, 0, nil, nil)
		acc.es.replaying = false // everything of this turn comes after the join
		undo = append(undo, acc.es.Close)
	}
	tr.feed = r.feeds.Hold(in.key)
	undo = append(undo, func() { r.feeds.Unhold(in.key, tr.feed) })
	if !r.enter() {
		return nil, errShutdown
	}
	undo = append(undo, r.wg.Done) // launch's goroutine calls it once the turn is on
	res, retry, err := r.storeInbound(ctx, in, append([]ledger.Entry{user, workingEntry(in.taskID)}, pushEntries...))
	switch {
	case err != nil:
		return nil, err
	case retry != "":
		return &accepted{retryTask: retry}, nil // undone: nothing of the turn began
	}
	r.seen.Put(in.key, seenMessage{id: in.m.MessageID, epoch: res.Epoch})
	acc.lt, acc.first = r.launch(ctx, in, tr, res)
	if acc.es != nil {
		acc.es.ended = acc.lt.finished
	}
	return acc, nil
}

// storeInbound appends the entries that begin the turn of the send in (its message
// first), checked for a repeat unless the Runner knows the message to be new (Dedup,
// retry.go): a repeat stores nothing and returns the task it repeats as retry, unless
// that task failed, was canceled or rejected (sentAgain) or is one this append settles:
// then the message is stored again, a new turn.
//
// With a shared store the same append first settles the conversation's other running
// tasks (planBegin): the turn holds the lease, so none of them is live. It is a
// compare-and-bump on the epoch the plan rests on; when another turn began meanwhile (a
// recovery mark, a cancel) it is planned again from the head. The settling entries are
// published here; the result holds the turn's own entries only.
func (r *Runner) storeInbound(ctx context.Context, in *inbound, entries []ledger.Entry) (_ ledger.AppendResult, retry string, _ error) {
	req := ledger.AppendRequest{Owner: in.peer, ContextID: in.m.ContextID, BeginTurn: true, Dedup: r.mayRepeat(in)}
	for attempt := 1; ; attempt++ {
		plan, err := r.planBegin(ctx, in, attempt > 1)
		if err != nil {
			return ledger.AppendResult{}, "", err
		}
		req.Epoch, req.Entries = plan.epoch, append(plan.settle, entries...)
		res, retry, err := r.appendInbound(ctx, in, req, len(plan.settle))
		switch {
		case errors.Is(err, ledger.ErrFenced) && attempt < beginAttempts:
			continue
		case err != nil:
			return ledger.AppendResult{}, "", fmt.Errorf("append inbound message: %w", err)
		case retry != "":
			return ledger.AppendResult{}, retry, nil
		}
		if n := len(plan.settle); n > 0 {
			r.log.WarnContext(ctx, "marked tasks of a stopped turn as failed as a new turn began in their conversation", "tasks", n)
			r.publish(ctx, in.peer, in.m.ContextID, res.Entries[:n])
			res.Entries = res.Entries[n:]
		}
		return res, "", nil
	}
}

// beginAttempts bounds how often storeInbound plans and appends the beginning of a turn
// that another turn's beginning fenced off. Only a recovery mark or a cancel can begin
// one while this turn holds the lease, and each settles what it marks, so two suffice
// but for a stale memory of the Runner's (planBegin).
const beginAttempts = 4

// appendInbound appends req, the beginning of the turn of in whose first settled entries
// settle other tasks (see storeInbound); retry names the task a repeated message belongs
// to (nothing was stored).
func (r *Runner) appendInbound(ctx context.Context, in *inbound, req ledger.AppendRequest, settled int) (_ ledger.AppendResult, retry string, _ error) {
	res, err := r.led.Append(ctx, req)
	var repeat *ledger.RepeatError
	if !errors.As(err, &repeat) {
		return res, "", err
	}
	settles := slices.ContainsFunc(req.Entries[:settled], func(e ledger.Entry) bool { return e.TaskID == repeat.TaskID })
	if !sentAgain(repeat) && !settles {
		return ledger.AppendResult{}, repeat.TaskID, nil
	}
	r.log.InfoContext(ctx, "a message sent again after its task ended unsuccessfully; running it as a new task",
		"message_id", in.m.MessageID, "earlier_task_id", repeat.TaskID, "earlier_state", repeat.State)
	req.Dedup = false
	res, err = r.led.Append(ctx, req)
	return res, "", err
}

// beginPlan is how the append that begins a turn keeps one running task per conversation
// (see planBegin): the epoch it compares and bumps (0: none) and the FAILED statuses of
// the tasks it settles.
type beginPlan struct {
	epoch  uint64
	settle []ledger.Entry
}

// planBegin plans the append that begins the turn of in, whose lease the Runner holds.
// Without a shared store it is a plain BeginTurn: Recover settled every task left running
// before serving, and this Runner alone runs turns on the ledger.
//
// With a shared store a task the ledger still shows running in the conversation cannot be
// live (the lease is ours): its turn stopped with its instance, or lost its lease and is
// fenced by this append. Such a task is marked FAILED in the same append, so that the
// conversation never shows two running tasks once a new turn has begun, however busy the
// context keeps the lease (the recovery sweep skips a held lease). Finding them costs a
// read (ConversationRunning), which the Runner skips when it knows there is none: the
// last turn it began here, in epoch e, has stored its end (seenMessage.ended) and every
// turn's beginning settles the others, so while the epoch is still e nothing runs. The
// append then compares and bumps e; if the epoch moved, the ledger refuses it (ErrFenced)
// and storeInbound calls again with reread. After a read the append compares the epoch
// read, so a recovery mark made between the read and the append is not made twice.
func (r *Runner) planBegin(ctx context.Context, in *inbound, reread bool) (beginPlan, error) {
	if !r.cfg.SharedStore {
		return beginPlan{}, nil
	}
	if m, ok := r.seen.Get(in.key); ok && m.ended && !reread {
		return beginPlan{epoch: m.epoch}, nil
	}
	conv, running, err := r.led.ConversationRunning(ctx, in.peer, in.m.ContextID)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return beginPlan{}, nil // a new conversation: nothing runs there (and no turn can begin it but ours)
	case err != nil:
		return beginPlan{}, fmt.Errorf("read the conversation's running tasks: %w", err)
	}
	plan := beginPlan{epoch: conv.Epoch}
	for _, id := range running {
		if id != in.taskID { // a follow-up to a task its stopped turn left running continues it
			plan.settle = append(plan.settle, stoppedEntry(id))
		}
	}
	return plan, nil
}

// newInbound validates a send of peer's message m and makes it what is stored: its
// task resolved (a follow-up to a task parked on input-required), its contextId checked
// or made, its size limits checked and its credentials redacted. A refusal stores
// nothing but, in a conversation that exists, an audit record.
func (r *Runner) newInbound(ctx context.Context, peer string, m a2a.Message) (*inbound, error) {
	in := &inbound{peer: peer, m: m, taskID: m.TaskID, started: time.Now()}
	if err := credentialIDs(&m); err != nil {
		return nil, err
	}
	if err := checkHops(&m); err != nil {
		return nil, err
	}
	if m.TaskID != "" {
		if err := r.continueTask(ctx, in); err != nil {
			return nil, err
		}
	}
	if in.m.ContextID == "" {
		in.m.ContextID = contextid.New()
	} else if err := contextid.Validate(in.m.ContextID); err != nil {
		return nil, err
	}
	if err := r.checkLimits(&in.m); err != nil {
		return nil, err
	}
	// a credential a peer pasted is never stored, shown to the agent or echoed back.
	in.m.Parts, _ = redactParts(in.m.Parts)
	in.m.Metadata, _ = redactMeta(in.m.Metadata)
	if !hasContent(in.m.Parts) {
		r.auditRejected(ctx, in.peer, &in.m, "EMPTY_MESSAGE", "")
		return nil, &paramError{Field: "message.parts", Reason: "the message has no content (all text parts are empty)"}
	}
	if in.taskID == "" {
		in.taskID = newTaskID()
	}
	in.key = contextid.Key(in.peer, in.m.ContextID)
	return in, nil
}

// continueTask checks a follow-up to the task in.m names: the caller's own task, in the
// same context (taken from the task when the message names none), and not ended. A task
// still running is left to the lease, which answers CONTEXT_BUSY.
func (r *Runner) continueTask(ctx context.Context, in *inbound) error {
	m := &in.m
	conv, entries, err := r.led.TaskEntries(ctx, m.TaskID)
	if errors.Is(err, ledger.ErrNotFound) || othersDamage(err, in.peer) || (err == nil && conv.Owner != in.peer) {
		return &taskNotFoundError{TaskID: m.TaskID}
	}
	if err != nil {
		return fmt.Errorf("load task: %w", err)
	}
	if m.ContextID == "" {
		m.ContextID = conv.ContextID
	} else if m.ContextID != conv.ContextID {
		return &paramError{Field: "message.contextId", Reason: fmt.Sprintf("does not match the context of task %s", a2a.EchoQuote(m.TaskID))}
	}
	if st := foldTask(conv, m.TaskID, entries).Status.State; st.Terminal() {
		if taskRetry(m, entries) {
			in.retryTask = m.TaskID
			return nil
		}
		r.auditRejected(ctx, in.peer, m, "TASK_TERMINAL", m.TaskID)
		return a2a.Errorf(a2a.ErrUnsupportedOperation,
			"task %s is %s and accepts no more messages; send without taskId to start a new task in the same context", a2a.EchoQuote(m.TaskID), st)
	}
	in.continuing = true
	return nil
}

// userEntry is the entry that stores the inbound message.
func userEntry(in *inbound) ledger.Entry {
	return ledger.Entry{
		TaskID: in.taskID, Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted,
		Visibility: ledger.VisibilityModel, Actor: in.peer, MessageID: in.m.MessageID,
		Role: ledger.RoleUser, Parts: toLedgerParts(in.m.Parts), Metadata: marshalMeta(in.m.Metadata),
	}
}

// workingEntry is the status entry stored with the inbound message: the task is working.
func workingEntry(taskID string) ledger.Entry {
	return ledger.Entry{TaskID: taskID, Kind: ledger.KindStatus, Trust: ledger.TrustSystem,
		Visibility: ledger.VisibilityModel, Actor: "gateway", State: string(a2a.StateWorking)}
}

// prepareTurn builds what the agent is given for the send in. H-1: the history is read
// before the message is appended, so the message is never in its own history; only the
// original text is stored.
func (r *Runner) prepareTurn(ctx context.Context, in *inbound, user ledger.Entry) (prepared, error) {
	if !usesContext(r.agent) {
		return prepared{prompt: in.m.Text()}, nil
	}
	hist, err := r.readHistory(ctx, in.peer, in.m.ContextID, 0)
	if err != nil {
		return prepared{}, err
	}
	prep, err := r.prepare(hist, in.peer, user)
	if err != nil {
		return prepared{}, err
	}
	prev, stable := r.prefixes.observe(in.key, prep.prompt)
	r.obs.Projection(len(prep.prompt), prev, stable)
	return prep, nil
}

// launch starts the turn tr of the send in, whose message res stored: it publishes the
// stored entries, registers the live task and runs the turn in a goroutine of the Runner,
// which from then on owns tr's lease and feed hold. It returns the live task and the task
// as the send's first reply shows it.
//
// The turn runs under the request's values (its logger, its request id) but not its
// cancellation: a turn outlives the request that started it. Close cancels it through
// r.base, CancelTask and a lost lease through lt.cancel.
func (r *Runner) launch(ctx context.Context, in *inbound, tr *turnRun, res ledger.AppendResult) (*liveTask, a2a.Task) {
	m := &in.m
	lt := newLiveTask(in.taskID, m.ContextID, in.peer)
	first := a2a.Task{
		ID: in.taskID, ContextID: m.ContextID,
		Status:  a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: res.Entries[0].CreatedAt},
		History: []a2a.Message{{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: in.taskID, Role: a2a.RoleUser, Parts: m.Parts, Metadata: m.Metadata}},
	}
	if in.continuing {
		first.Status.State = a2a.StateWorking
	}
	r.publish(ctx, in.peer, m.ContextID, res.Entries)

	// The turn outlives the request (it runs under the runner's cancellation) but logs as
	// part of it: the request's log scope (request_id, method) is carried over.
	tctx, cancel := context.WithCancelCause(logctx.WithAttrs(context.WithoutCancel(ctx),
		slog.String(logctx.KeyContextID, m.ContextID), slog.String(logctx.KeyTaskID, in.taskID)))
	stopBase := context.AfterFunc(r.base, func() { cancel(context.Canceled) })
	lt.cancel = cancel
	r.mu.Lock()
	r.live[in.taskID] = lt
	r.mu.Unlock()
	tr.lt, tr.epoch, tr.keepStored, tr.metadata = lt, res.Epoch, !in.continuing, m.Metadata
	tr.keep(res.Entries)
	go func() { // exits when the agent is done and the end is recorded
		defer r.wg.Done() // the turn's place in r.wg, taken by enter
		defer func() { stopBase(); cancel(nil) }()
		tr.run(tctx)
	}()
	return lt, first
}

// enter admits a turn whose message is about to be stored: false once Close has begun.
// Close waits for every turn admitted (r.wg); so a send that began just before Close
// either stores nothing or has its turn waited for (and canceled at the deadline), never
// a turn left running after Close returned.
func (r *Runner) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing.Load() {
		return false
	}
	r.wg.Add(1)
	return true
}

// acquire takes the context's lease; with a BusyWait it waits for a busy context to free
// up until the bound, then reports it held.
func (r *Runner) acquire(ctx context.Context, key, holder string) (*locking.Lease, error) {
	t0 := time.Now()
	lease, err := r.locks.Acquire(ctx, key, holder)
	if errors.Is(err, locking.ErrHeld) && r.awaitEnding(ctx, key) {
		lease, err = r.locks.Acquire(ctx, key, holder) // the ending turn gave the lease up
	}
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

// takeLease takes the context lease of the send in, once the turn ending there has handed
// it over. A send that repeats the context's latest message while a turn holds the lease
// (retry.go) takes none: retry names that message's task. (With the lease taken, the
// append of the message checks for a repeat: start.)
// A refusal is refuse's error.
func (r *Runner) takeLease(ctx context.Context, in *inbound) (_ *locking.Lease, retry string, _ error) {
	lease, err := r.acquire(ctx, in.key, in.taskID)
	if err != nil {
		if errors.Is(err, locking.ErrHeld) && r.mayRepeat(in) {
			if task, ok, rerr := r.latestRetry(ctx, in); rerr == nil && ok {
				return nil, task, nil
			}
		}
		return nil, "", r.refuse(ctx, in.peer, in.m.ContextID, err, func(holder string) ledger.Entry {
			return auditEntry(in.peer, &in.m, "CONTEXT_BUSY", holder)
		})
	}
	if err := r.awaitHandover(ctx, in.key); err != nil {
		r.releaseLease(ctx, lease)
		return nil, "", err
	}
	return lease, "", nil
}

func hasContent(ps []a2a.Part) bool {
	for _, p := range ps {
		if p.Kind != a2a.PartText || strings.TrimSpace(p.Text) != "" {
			return true
		}
	}
	return false
}

// refuse turns a failed Acquire of contextID's lease into the caller's error. A busy
// context counts the refusal and records the refused request as the entry busyAudit makes
// of the running task's id (an AUDIT_ONLY entry, which never enters the conversation): a
// *busyError. A failing lock service fails closed: an error wrapping
// locking.ErrUnavailable.
func (r *Runner) refuse(ctx context.Context, peer, contextID string, err error, busyAudit func(holder string) ledger.Entry) error {
	var held *locking.HeldError
	switch {
	case errors.As(err, &held):
		r.audit(ctx, auditItem{req: ledger.AppendRequest{Owner: peer, ContextID: contextID, Entries: []ledger.Entry{busyAudit(held.Holder)}}})
		r.obs.Busy()
		return &busyError{ContextID: contextID, Holder: held.Holder, Err: err}
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, locking.ErrClosed):
		return err
	}
	r.log.WarnContext(ctx, "lease unavailable", "context_key", contextid.Key(peer, contextID), "err", err)
	if !errors.Is(err, locking.ErrUnavailable) {
		err = fmt.Errorf("%w: %w", locking.ErrUnavailable, err)
	}
	return err
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
func (r *Runner) auditRejected(ctx context.Context, peer string, m *a2a.Message, reason, taskID string) {
	if m.ContextID == "" || contextid.Validate(m.ContextID) != nil {
		return
	}
	r.audit(ctx, auditItem{req: ledger.AppendRequest{Owner: peer, ContextID: m.ContextID, Entries: []ledger.Entry{auditEntry(peer, m, reason, taskID)}}, ifExists: true})
}

// awaitHandover waits until the turn of the context key that gave its lease up on ending
// (turnRun.handOver) has published its end and left, so that the next turn's events
// follow it on the context's feed in seq order. The wait is short: what that turn still
// does is in memory. It returns ctx's error when ctx ends first.
func (r *Runner) awaitHandover(ctx context.Context, key string) error {
	r.mu.Lock()
	done := r.handovers[key]
	r.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// awaitEnding is called after an Acquire of the context key met a held lease. When the
// holder is a turn of this Runner storing its end and giving the lease up
// (beginHandover), it waits until the turn has (bounded by FinalizeTimeout and ctx). It
// reports whether the caller should try the lease again: after that handover, and also
// when no turn of the key is ending here, because the holder may have ended, handed over
// and left between the caller's Acquire and this look (a sender preempted between the
// two was refused with CONTEXT_BUSY for a turn its client had seen end). The ledger shows
// a turn's end from its commit on, so a client that read it there (GetTask) and sends at
// once is admitted, not refused.
func (r *Runner) awaitEnding(ctx context.Context, key string) bool {
	r.mu.Lock()
	done := r.handovers[key]
	r.mu.Unlock()
	if done == nil {
		return true // one more Acquire: it fails again while the holder still runs
	}
	t := time.NewTimer(r.cfg.FinalizeTimeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// releaseLease releases l. It runs without ctx's cancellation (a lease is released even
// after the caller has gone), bounded by FinalizeTimeout; a failure is logged, as the
// lease expires by itself.
func (r *Runner) releaseLease(ctx context.Context, l *locking.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.FinalizeTimeout)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		r.log.WarnContext(ctx, "lease release failed; it expires by itself", "err", err)
	}
}

// turnRun is one running turn, owned by the goroutine started in launch.
type turnRun struct {
	r     *Runner
	lt    *liveTask
	lease *locking.Lease
	epoch uint64
	peer  string
	text  string
	// messageID is the inbound message's messageId, given to the agent.
	messageID string
	metadata  map[string]any // the inbound message's metadata, given to the turn's tools
	prep      prepared       // what the agent is given

	started time.Time  // when the send arrived
	key     string     // the context's key
	feed    *feed.Feed // the context's live feed, held while the turn runs

	stopWatch  func()        // ends watchLease; idempotent
	leaseGone  bool          // the lease was released (handOver or release)
	handedOver chan struct{} // set by handOver: closed by release when the turn has left

	chunks     chunks
	chunkErr   error // set by the chunk writer before it exits
	chunksMade int   // REPLY_CHUNK entries stored
	stored     []ledger.Entry
	keepStored bool // this turn created the task: lt.stored gets every entry
	artifactID string
}

// run asks the agent for the reply, streams it and records the end of the turn; then it
// releases what the turn holds. ctx is the turn's context (see launch).
func (tr *turnRun) run(ctx context.Context) {
	r, lt := tr.r, tr.lt
	defer tr.release(ctx)
	tr.artifactID = uuid.NewString()
	stopWriter := tr.startWriter(ctx)
	defer stopWriter()
	defer func() {
		if p := recover(); p != nil {
			r.log.ErrorContext(ctx, "agent panicked", "task_id", lt.id, "panic", p)
			stopWriter()
			tr.finish(ctx, fmt.Errorf("%w: panic: %v", agent.ErrBackend, p), agent.Result{})
		}
	}()
	tr.stopWatch = sync.OnceFunc(tr.watchLease())
	defer tr.stopWatch()
	emit := func(c string) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		tr.chunks.add(c)
		return nil
	}
	tools, endTools := tr.toolsFor()
	defer endTools()
	t0 := time.Now()
	res, err := r.agent.Reply(ctx, agent.Turn{
		ContextID: lt.contextID, TaskID: lt.id, Peer: tr.peer, MessageID: tr.messageID, Text: tr.text,
		Prompt: tr.prep.prompt, Request: tr.prep.request, UpstreamContextID: tr.prep.upstream, UpstreamTaskID: tr.prep.upstreamTask,
		Tools: tools, MaxToolCalls: r.cfg.MaxToolCalls, ToolTime: r.cfg.ToolTime,
	}, emit)
	r.obs.AgentDone(time.Since(t0), err)
	stopWriter()
	if err == nil && tr.chunkErr != nil {
		err = tr.chunkErr
	}
	tr.finish(ctx, err, res)
}

// release gives back what the turn holds (its lease, its hold on the feed, its place among
// the live tasks) and tells those waiting for the turn that it ended.
func (tr *turnRun) release(ctx context.Context) {
	r := tr.r
	if !tr.leaseGone {
		tr.leaseGone = true
		r.releaseLease(ctx, tr.lease)
	}
	r.feeds.Unhold(tr.key, tr.feed)
	r.mu.Lock()
	delete(r.live, tr.lt.id)
	if tr.handedOver != nil && r.handovers[tr.key] == tr.handedOver {
		delete(r.handovers, tr.key)
	}
	r.mu.Unlock()
	if tr.handedOver != nil {
		close(tr.handedOver)
	}
	close(tr.lt.finished)
}

// handOver gives the context's lease up once the end of the turn is stored and before
// anyone is told of it (the final status on the feed, a blocking send's answer): a client
// that has seen the turn end can send the next turn at once, without a false
// CONTEXT_BUSY. The agent has replied and the chunk writer has stopped, so two turns
// never run at once; and the turn appends nothing more in its epoch. The next turn of the
// context in this Runner waits (awaitHandover) until this one has published its end and
// left (release), so the feed keeps seq order.
func (tr *turnRun) handOver(ctx context.Context) {
	if tr.leaseGone {
		return
	}
	tr.beginHandover()
	tr.stopWatch() // a lease given up on purpose is not a lost one
	tr.leaseGone = true
	tr.r.releaseLease(ctx, tr.lease)
}

// beginHandover marks the turn as ending, from just before its end is stored (the agent
// has replied; a reader of the ledger sees the end from its commit on, before the lease
// is given up): a send to the context that finds the lease still held waits for the
// handover (awaitEnding) instead of being refused, and the next turn waits until this
// one has left (awaitHandover). Idempotent.
func (tr *turnRun) beginHandover() {
	if tr.handedOver != nil {
		return
	}
	tr.handedOver = make(chan struct{})
	tr.r.mu.Lock()
	tr.r.handovers[tr.key] = tr.handedOver
	tr.r.mu.Unlock()
}

// startWriter starts the goroutine that stores the reply's chunks (writeChunks). The
// returned stop ends it and waits for it; calls after the first do nothing.
func (tr *turnRun) startWriter(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() { tr.writeChunks(ctx, done) }) // exits when done is closed (or a chunk append failed)
	return sync.OnceFunc(func() {
		close(done)
		writer.Wait()
	})
}

// watchLease cancels the turn when its lease is lost: another instance may now run this
// context. The returned stop ends the watch and waits for it.
func (tr *turnRun) watchLease() (stop func()) {
	lost := tr.lease.Lost()
	if lost == nil {
		return func() {}
	}
	done := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() { // exits when the lease is lost or the turn ends
		select {
		case <-lost:
			tr.lt.cancel(locking.ErrLost)
		case <-done:
		}
	})
	return func() { close(done); watch.Wait() }
}

// writeChunks stores the reply's pending text as REPLY_CHUNK entries while someone
// watches the context (here, or elsewhere over a shared store: see
// Runner.WatchedElsewhere), and publishes them. Text produced while nobody watched is
// stored in the first chunk taken after someone does, or in the reply at the end. It
// exits when stop is closed, or after a failed append (recorded in chunkErr; the turn is
// canceled).
//
// Once the agent has replied (stop closed), text still pending is left to the turn's end:
// finish stores it in the same commit as the reply and the final status, so an agent that
// replies faster than a commit costs one commit for its reply instead of two, and its
// readers see that text no later than they would have.
func (tr *turnRun) writeChunks(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		watched, joined := tr.feed.Watched()
		if watched {
			if text := tr.chunks.take(false); text != "" {
				if err := tr.appendChunk(ctx, text, false); err != nil {
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

// appendChunk stores one chunk in the turn's epoch and publishes it. It runs without the
// turn's cancellation (ctx's values only), bounded by FinalizeTimeout.
func (tr *turnRun) appendChunk(ctx context.Context, text string, last bool) error {
	r := tr.r
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.FinalizeTimeout)
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

// Status texts of a turn that failed.
const (
	textFenced   = "a newer turn took over this context; this turn's reply was not stored"
	textLeaseOff = "the gateway lost this context's lease during the turn; send the message again"
	textShutdown = "the gateway shut down during this turn; send the message again"
	textAgent    = "the agent failed to reply; the operator's log has the detail"
	textNotSaved = "internal error: the reply could not be stored"
)

// finish records the end of the turn (reply, status) and publishes it. When the end
// cannot be stored, the task is closed as failed (recordFailure).
func (tr *turnRun) finish(ctx context.Context, agentErr error, res agent.Result) {
	r, lt := tr.r, tr.lt
	state, statusText := tr.endState(ctx, agentErr, res)
	entries := tr.endEntries(agentErr, res, state, statusText)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.FinalizeTimeout)
	defer cancel()
	tr.beginHandover() // readers of the ledger see the end from its commit on: see handOver
	stored, err := r.led.Append(fctx, ledger.AppendRequest{Owner: tr.peer, ContextID: lt.contextID, Epoch: tr.epoch, Entries: entries})
	if err != nil {
		failed := tr.recordFailure(fctx, err)
		if failed == nil {
			lt.unrecorded = &unrecordedEndError{TaskID: lt.id, Err: err}
		}
		tr.saveStored()
		r.obs.TurnDone(string(a2a.StateFailed), time.Since(tr.started))
		tr.handOver(fctx)
		r.publish(fctx, tr.peer, lt.contextID, failed)
		return
	}
	r.obs.TurnDone(string(state), time.Since(tr.started))
	if r.cfg.SharedStore {
		r.seen.turnEnded(tr.key, tr.epoch) // before the lease is handed over: the next turn here reads it (planBegin)
	}
	tr.keep(stored.Entries)
	tr.saveStored()
	if agentErr == nil && directMessage(res) {
		lt.message = findReply(stored.Entries)
	}
	tr.handOver(fctx) // before the final status is published: see handOver
	r.publish(fctx, tr.peer, lt.contextID, stored.Entries)
}

// saveStored hands a new task's entries to those waiting for the turn (SendMessage).
func (tr *turnRun) saveStored() {
	if tr.keepStored {
		tr.lt.stored = tr.stored
	}
}

// endState is the state the turn ends in, given the agent's error and result and the
// cause of the turn's cancellation, and for a failure the status text that explains it.
func (tr *turnRun) endState(ctx context.Context, agentErr error, res agent.Result) (a2a.TaskState, string) {
	log, id := tr.r.log, tr.lt.id
	cause := context.Cause(ctx)
	switch {
	case agentErr == nil && res.InputRequired:
		return a2a.StateInputRequired, ""
	case agentErr == nil && res.Rejected:
		return a2a.StateRejected, ""
	case agentErr == nil:
		return a2a.StateCompleted, ""
	case errors.Is(cause, errCanceledByPeer):
		return a2a.StateCanceled, ""
	case errors.Is(cause, ledger.ErrFenced):
		return a2a.StateFailed, textFenced
	case errors.Is(cause, locking.ErrLost):
		log.WarnContext(ctx, "lease lost during a turn; canceled it", "task_id", id)
		return a2a.StateFailed, textLeaseOff
	case ctx.Err() != nil:
		return a2a.StateFailed, textShutdown
	}
	log.WarnContext(ctx, "agent failed", "task_id", id, "err", agentErr)
	return a2a.StateFailed, agentFailureText(agentErr)
}

// endEntries are the entries that record the end of the turn: the last chunk of a
// streamed reply, the reply (unless the agent failed before any), an error record for a
// failure, and the final status.
func (tr *turnRun) endEntries(agentErr error, res agent.Result, state a2a.TaskState, statusText string) []ledger.Entry {
	id := tr.lt.id
	reply, rest := tr.chunks.reply()
	var extra []ledger.Part
	if agentErr == nil && len(res.Parts) > 0 {
		parts, _ := redactParts(res.Parts) // X-3, as the text
		extra = toLedgerParts(parts)
	}
	var entries []ledger.Entry
	if tr.chunksMade > 0 {
		last := tr.chunkEntry(rest, true)
		last.Parts = replyParts(rest, extra)
		entries = append(entries, last)
	}
	if reply != "" || agentErr == nil {
		e := tr.replyEntry(agentErr, res, reply)
		e.Parts = replyParts(reply, extra)
		entries = append(entries, e)
	}
	status := ledger.Entry{TaskID: id, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, Actor: "gateway", State: string(state), MessageID: uuid.NewString()}
	switch {
	case statusText != "":
		status.Parts = []ledger.Part{{Kind: ledger.PartText, Text: statusText}}
		if agentErr != nil {
			entries = append(entries, ledger.Entry{TaskID: id, Kind: ledger.KindError, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit, Actor: "gateway", Parts: []ledger.Part{{Kind: ledger.PartText, Text: statusText}}})
		}
	case state == a2a.StateInputRequired || state == a2a.StateRejected:
		status.Parts = []ledger.Part{{Kind: ledger.PartText, Text: reply}}
	}
	return append(entries, status)
}

// replyEntry is the AGENT_REPLY entry of reply; after an agent error it is marked partial.
func (tr *turnRun) replyEntry(agentErr error, res agent.Result, reply string) ledger.Entry {
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
	if agentErr == nil && directMessage(res) {
		meta[metaMessage] = true
	}
	return ledger.Entry{
		TaskID: tr.lt.id, Kind: ledger.KindAgentReply, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel,
		Actor: "agent", MessageID: uuid.NewString(), Role: ledger.RoleAgent,
		Parts: []ledger.Part{{Kind: ledger.PartText, Text: reply}}, Metadata: marshalMeta(meta),
	}
}

// recordFailure closes the task whose end could not be stored (err) without touching the
// conversation: an audit-only FAILED status, so the task does not stay "working" and no
// reply enters a newer turn. It returns the stored status for the caller to publish. If
// even that fails, it returns nil and the task's streams end without a final status
// (eventStream.ended).
func (tr *turnRun) recordFailure(ctx context.Context, err error) []ledger.Entry {
	r, lt := tr.r, tr.lt
	text := textNotSaved
	if errors.Is(err, ledger.ErrFenced) {
		text = textFenced
		r.log.WarnContext(ctx, "turn fenced off: a newer holder owns the context", "task_id", lt.id)
	} else {
		r.log.ErrorContext(ctx, "recording the end of a turn failed", "task_id", lt.id, "err", err)
	}
	failed, err := r.led.Append(ctx, ledger.AppendRequest{Owner: tr.peer, ContextID: lt.contextID, Entries: []ledger.Entry{{
		TaskID: lt.id, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit,
		Actor: "gateway", State: string(a2a.StateFailed), MessageID: uuid.NewString(),
		Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}},
	}}})
	if err != nil {
		r.log.ErrorContext(ctx, "recording a turn's failure failed; its streams end without a final status", "task_id", lt.id, "err", err)
		return nil
	}
	tr.keep(failed.Entries)
	return failed.Entries
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
