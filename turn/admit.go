package turn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// inbound is a send that passed validation: the message as it is stored (redacted, with
// its contextId), the task it starts or continues, and the context's key.
type inbound struct {
	peer       string
	m          a2a.Message
	taskID     string
	key        string
	continuing bool      // m continues a task parked on input-required
	awaited    bool      // a blocking send waits for the turn's task (not a stream, not ReturnImmediately)
	started    time.Time // when the send arrived
	retryTask  string    // m repeats a message of this ended task (retry.go)
}

// start validates a send of peer's, takes the context's lease, persists the inbound
// message and starts the turn. On return without error the message is durable and the
// turn owns the lease and the feed hold. With watch it also returns the task's event
// stream, joined before the first append so it misses nothing. A retried send (retry.go;
// found while a turn holds the lease, or by the append's Dedup check) returns with only
// out.retryTask set: nothing stored, no lease held.
//
// The send runs in the turn's span (a2a.turn, trace.go): ended here when start fails or
// answers a retry, and by the turn (turnRun.release) once it is launched.
func (r *Runner) start(ctx context.Context, peer string, p *a2a.SendParams, watch bool) (*accepted, error) {
	ctx, span := r.tracer.Start(ctx, spanTurn)
	out, err := r.admit(ctx, peer, p, watch)
	switch {
	case err != nil:
		span.SetAttributes(attribute.String(attrPeer, peer), attribute.String(attrMessageID, p.Message.MessageID))
		endSpan(span, err)
	case out.retryTask != "":
		span.SetAttributes(attribute.String(attrPeer, peer), attribute.String(attrMessageID, p.Message.MessageID),
			attribute.Bool(attrRetry, true), attribute.String(attrTaskID, out.retryTask))
		span.End()
	}
	return out, err
}

// admit is start without its span. Every resource it takes is pushed on undo as it is
// taken; one deferred call releases them in reverse order when it fails, so no failure
// path can forget one.
func (r *Runner) admit(ctx context.Context, peer string, p *a2a.SendParams, watch bool) (out *accepted, err error) {
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
	in.awaited = !watch && !p.Config.ReturnImmediately
	pushEntries, err := r.sendPushConfig(ctx, in, p.Config.Push) // push.go
	if err != nil {
		return nil, err
	}
	var undo undoStack
	defer func() {
		if err != nil || out.retryTask != "" {
			undo.run()
		}
	}()
	lease, retry, err := r.takeLease(ctx, in)
	switch {
	case err != nil:
		return nil, err
	case retry != "":
		return &accepted{retryTask: retry}, nil
	}
	undo.push(func() { r.leases.release(ctx, lease) })
	return r.begin(ctx, in, lease, pushEntries, watch, &undo)
}

// begin starts the turn of the send in, whose lease start holds: it prepares what the
// agent is given, joins the task's stream (watch), holds the context's feed, stores the
// message (with the entries of its push config) and launches the turn. What it takes is
// pushed on undo, for start to release when it fails or answers a retry.
func (r *Runner) begin(ctx context.Context, in *inbound, lease *locking.Lease, pushEntries []ledger.Entry, watch bool, undo *undoStack) (*accepted, error) {
	user := userEntry(in)
	tr := &turnRun{r: r, lease: lease, peer: in.peer, text: in.m.Text(), messageID: in.m.MessageID, started: in.started, key: in.key,
		chunks: chunks{wake: make(chan struct{}, 1)}}
	var err error
	if tr.prep, err = r.prepareTurn(ctx, in, user); err != nil {
		return nil, err
	}
	acc := &accepted{}
	if watch {
		acc.es = r.newEventStream(in.peer, in.m.ContextID, in.taskID, 0, nil, nil)
		acc.es.replaying = false // everything of this turn comes after the join
		undo.push(acc.es.Close)
	}
	tr.feed = r.feeds.Hold(in.key)
	undo.push(func() { r.feeds.Unhold(in.key, tr.feed) })
	if !r.enter() {
		return nil, errShutdown
	}
	undo.push(r.wg.Done) // launch's goroutine calls it once the turn is on
	begins := append(append([]ledger.Entry{user, workingEntry(in.taskID)}, tr.prep.memEntries...), pushEntries...)
	res, retry, err := r.storeInbound(ctx, in, begins)
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

// undoStack is the releases of what a send has taken so far, run in reverse order when
// it fails (start).
type undoStack []func()

func (u *undoStack) push(release func()) { *u = append(*u, release) }

func (u *undoStack) run() {
	for _, release := range slices.Backward(*u) {
		release()
	}
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
	conv, entries, err := r.tasks.TaskEntries(ctx, m.TaskID)
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

func hasContent(ps []a2a.Part) bool {
	for _, p := range ps {
		if p.Kind != a2a.PartText || strings.TrimSpace(p.Text) != "" {
			return true
		}
	}
	return false
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
	pl, err := r.history.PlanTurn(ctx, r.store, r.cfg.Policy, in.peer, in.m.ContextID, user) // nil cache: PlanTurn
	if err != nil {
		return prepared{}, err
	}
	mem, memEntries, memorySeq := r.memoryFor(ctx, in, pl) // memory.go
	prep := preparedOf(pl.Input(mem))
	prep.memEntries, prep.memorySeq = memEntries, memorySeq
	prev, stable := r.prefixes.observe(in.key, prep.prompt)
	r.obs.Projection(len(prep.prompt), prev, stable)
	prep.requestBytes, prep.prevBytes, prep.reuseBytes = len(prep.prompt), prev, stable
	return prep, nil
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
	res, err := r.store.Append(ctx, req)
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
	res, err = r.store.Append(ctx, req)
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
	conv, running, err := r.store.ConversationRunning(ctx, in.peer, in.m.ContextID)
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
