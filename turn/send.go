package turn

import (
	"context"
	"slices"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/ledger"
)

// SendMessage implements a2a.Handler. Its errors are protocol errors (see protocolError):
// invalid params naming the field, TASK_NOT_FOUND, UNSUPPORTED_OPERATION for an ended
// task, CONTEXT_BUSY, UNAVAILABLE during shutdown; an internal error for a request
// without a caller (WithPeer).
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

// SendStreamingMessage implements a2a.Handler. Its errors are those of SendMessage, and
// RATE_LIMITED when the caller has MaxStreamsPerPeer streams open.
func (r *Runner) SendStreamingMessage(ctx context.Context, p *a2a.SendParams) (_ a2a.Stream, err error) {
	defer func() { err = protocolError(err) }()
	peer, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	release, err := r.streams.open(peer)
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

// messageResult is a blocking send's answer when the agent replied with a direct Message
// (agent.Result.Message): that Message, its large parts loaded. It names no task when the
// turn started one (the caller never learns of the task the gateway keeps the turn in; it
// ended COMPLETED), and the task it continued otherwise. Errors: the artifact store's.
func (r *Runner) messageResult(ctx context.Context, lt *liveTask) (a2a.SendResult, error) {
	e := []ledger.Entry{*lt.message}
	e[0].Parts = slices.Clone(e[0].Parts) // inflate writes them; lt.stored shares them
	if err := r.inflate(ctx, e); err != nil {
		return a2a.SendResult{}, err
	}
	taskID := lt.id
	if lt.stored != nil {
		taskID = ""
	}
	m := replyMessage(&e[0], lt.contextID, taskID)
	return a2a.SendResult{Message: &m}, nil
}
