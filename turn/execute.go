package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/feed"
	"github.com/a2a-gateway/gateway/internal/logctx"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

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
	// Only a blocking send reads the entries (SendMessage folds its task from them); a
	// stream's turn would keep every chunk of its reply until it ends.
	tr.lt, tr.epoch, tr.keepStored, tr.metadata = lt, res.Epoch, !in.continuing && in.awaited, m.Metadata
	tr.span = trace.SpanFromContext(ctx) // start's a2a.turn: release ends it
	tr.keep(res.Entries)
	go func() { // exits when the agent is done and the end is recorded
		defer r.wg.Done() // the turn's place in r.wg, taken by enter
		defer func() { stopBase(); cancel(nil) }()
		tr.run(tctx)
	}()
	return lt, first
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

	span    trace.Span    // the turn's (a2a.turn), ended by release
	state   a2a.TaskState // the state the turn ended in (finish)
	emitted atomic.Int64  // bytes of reply text the agent emitted

	stopWatch  func()        // ends watchLease; idempotent
	leaseGone  bool          // the lease was released (handOver or release)
	handedOver chan struct{} // set by handOver: closed by release when the turn has left

	chunks     chunks
	chunkErr   error // set by the chunk writer before it exits
	chunksMade int   // REPLY_CHUNK entries stored
	stored     []ledger.Entry
	keepStored bool // this turn created the task and a blocking send waits for it: lt.stored gets every entry
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
		tr.emitted.Add(int64(len(c)))
		return nil
	}
	res, err := tr.reply(ctx, emit)
	stopWriter()
	if err == nil && tr.chunkErr != nil {
		err = tr.chunkErr
	}
	tr.finish(ctx, err, res)
}

// reply asks the agent for the reply (in an agent.run span: the backend's own spans and
// the tool calls' are its children), streaming it through emit.
func (tr *turnRun) reply(ctx context.Context, emit func(string) error) (agent.Result, error) {
	r, lt := tr.r, tr.lt
	ctx, span := r.tracer.Start(ctx, spanAgent)
	tools, endTools := tr.toolsFor()
	defer endTools()
	t0 := time.Now()
	res, err := r.agent.Reply(ctx, agent.Turn{
		ContextID: lt.contextID, TaskID: lt.id, Peer: tr.peer, MessageID: tr.messageID, Text: tr.text,
		Prompt: tr.prep.prompt, Request: tr.prep.request, UpstreamContextID: tr.prep.upstream, UpstreamTaskID: tr.prep.upstreamTask,
		Tools: tools, MaxToolCalls: r.cfg.MaxToolCalls, ToolTime: r.cfg.ToolTime,
	}, emit)
	r.obs.AgentDone(time.Since(t0), err)
	if res.Usage.InputTokens > 0 {
		r.obs.ProviderCache(res.Usage.InputTokens, res.Usage.CachedTokens)
	}
	endSpan(span, err)
	return res, err
}

// release gives back what the turn holds (its lease, its hold on the feed, its place among
// the live tasks) and tells those waiting for the turn that it ended.
func (tr *turnRun) release(ctx context.Context) {
	r := tr.r
	if !tr.leaseGone {
		tr.leaseGone = true
		r.leases.release(ctx, tr.lease)
	}
	r.feeds.Unhold(tr.key, tr.feed)
	r.mu.Lock()
	delete(r.live, tr.lt.id)
	r.mu.Unlock()
	if tr.handedOver != nil {
		r.leases.handedOver(tr.key, tr.handedOver)
		close(tr.handedOver)
	}
	tr.endSpan() // before finished: a blocking send returns with the turn's span ended
	close(tr.lt.finished)
}

// endSpan ends the turn's span with the state the turn ended in; a failed turn's status is
// Error (its description the state: the status text may not be the span's to carry).
func (tr *turnRun) endSpan() {
	tr.span.SetAttributes(attribute.String(attrPeer, tr.peer), attribute.String(attrMessageID, tr.messageID),
		attribute.String(attrTaskID, tr.lt.id), attribute.String(attrState, string(tr.state)),
		attribute.Int64(attrBytes, tr.emitted.Load()))
	if tr.state == a2a.StateFailed || tr.state == "" {
		tr.span.SetStatus(codes.Error, string(a2a.StateFailed))
	}
	tr.span.End()
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
	tr.r.leases.release(ctx, tr.lease)
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
	tr.handedOver = tr.r.leases.handingOver(tr.key)
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
	stored, err := r.store.Append(fctx, ledger.AppendRequest{Owner: tr.peer, ContextID: lt.contextID, Epoch: tr.epoch, Entries: entries})
	if err != nil {
		failed := tr.recordFailure(fctx, err)
		if failed == nil {
			lt.unrecorded = &unrecordedEndError{TaskID: lt.id, Err: err}
		}
		tr.saveStored()
		tr.state = a2a.StateFailed
		r.obs.TurnDone(ctx, string(a2a.StateFailed), time.Since(tr.started))
		tr.handOver(fctx)
		r.publish(fctx, tr.peer, lt.contextID, failed)
		return
	}
	tr.state = state
	r.obs.TurnDone(ctx, string(state), time.Since(tr.started))
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
	status := ledger.Entry{TaskID: id, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, Actor: "gateway", State: string(state), MessageID: uuid.NewString(),
		Metadata: promptMeta(&tr.prep, res.Usage)}
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
	failed, err := r.store.Append(ctx, ledger.AppendRequest{Owner: tr.peer, ContextID: lt.contextID, Entries: []ledger.Entry{{
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
