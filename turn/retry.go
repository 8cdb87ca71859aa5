package turn

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/genmap"
	"github.com/a2a-gateway/gateway/ledger"
)

// A retried send. A client that lost the answer to a send (a dropped connection, a proxy's
// timeout during a long turn) sends the same message again, with the same messageId. The
// spec lets a server deduplicate by messageId (a2a-spec.md, "Idempotency"); the gateway
// does it for the message a client is most likely to repeat: the latest user message of
// the conversation, or a message of the task the send names. A send is a retry when its
// messageId and its parts (after redaction, as stored) equal that message's: it starts no
// turn and stores nothing, not even an audit record, and is answered with the task the
// message started or continued (retryAnswer, retryStream). The same messageId with other
// parts is a new message, as before, and so is the message sent again after its task
// failed, was canceled or rejected (sentAgain).
//
// Where the check runs: once the send holds the context's lease, in the transaction that
// appends its message (ledger.AppendRequest.Dedup, a *ledger.RepeatError when it
// repeats), so that a new conversation costs no read at all; while a turn holds the
// lease, before the send is refused as busy (latestRetry, a read).

// latestSeenMax is how many conversations one generation of a Runner's latestSeen holds:
// with two generations, at most 2 × 16,384, a key and a messageId each: 6.5 MiB of heap
// measured with UUID messageIds, 13 MiB with 256-byte ones.
const latestSeenMax = 1 << 14

// latestSeen remembers, per conversation key, the messageId of the latest user message
// the Runner stored there and the epoch of its turn, so that a send whose messageId
// differs from the remembered one is known to repeat nothing: its append skips the check
// (which reads the conversation's tail in the committer's transaction) and a busy context
// is not read. A conversation not remembered (new, or not used since the Runner started
// or for a whole generation of the map) is checked. Without a shared store every user message of a peer's
// conversation is stored by this Runner (start). Over a shared store other instances
// store some: the store announces every append with its epoch (Announce), and one in a
// newer epoch (another instance began a turn) forgets the conversation, as does an
// announcement without an epoch. Its generations hold latestSeenMax keys (New sets it).
type latestSeen struct {
	genmap.Map[seenMessage]
}

// seenMessage is the latest user message the Runner stored in a conversation.
type seenMessage struct {
	id    string // its messageId
	epoch uint64 // the epoch of the turn it began
	// ended: that turn has stored its end (its task settled), so that while the
	// conversation's epoch is still epoch no task runs there (planBegin).
	ended bool
}

// turnEnded records that the turn of key that began in epoch has stored its end, unless
// the Runner has forgotten that turn (a newer epoch was announced, or it left the map).
func (l *latestSeen) turnEnded(key string, epoch uint64) {
	if m, ok := l.Get(key); ok && m.epoch == epoch {
		m.ended = true
		l.Put(key, m)
	}
}

// announced forgets key when an append announced in epoch (0: unknown) may hold a user
// message the Runner did not store.
func (l *latestSeen) announced(key string, epoch uint64) {
	l.DeleteIf(key, func(m seenMessage) bool { return epoch == 0 || epoch > m.epoch })
}

// mayRepeat reports whether the send in may repeat its conversation's latest message, so
// that it must be checked: unless the Runner remembers another messageId there.
func (r *Runner) mayRepeat(in *inbound) bool {
	m, ok := r.seen.Get(in.key)
	return !ok || m.id == in.m.MessageID
}

// sentAgain reports whether the repeat of a message whose task ended as repeat says is a
// message sent again to run again, not a retry: its task failed (the gateway's own
// failures say "send the message again"), was canceled or rejected, so that answering
// with that task would leave no way to have the message run.
func sentAgain(repeat *ledger.RepeatError) bool {
	switch a2a.TaskState(repeat.State) {
	case a2a.StateFailed, a2a.StateCanceled, a2a.StateRejected:
		return true
	}
	return false
}

// latestRetry reports whether in repeats the latest user message of its conversation,
// among the last ledger.DedupWindow entries, and returns the task that message started
// or continued. A conversation that does not exist yet has nothing to repeat.
func (r *Runner) latestRetry(ctx context.Context, in *inbound) (taskID string, ok bool, err error) {
	got, err := r.store.LastBefore(ctx, in.peer, in.m.ContextID, 0, 1, ledger.UntilUserMessage())
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read the latest message: %w", err)
	case len(got) == 0 || !repeats(&got[0], &in.m):
		return "", false, nil
	}
	return got[0].TaskID, true, nil
}

// taskRetry reports whether m repeats one of the user messages among entries (a task's);
// m's parts are compared as they would be stored (redacted).
func taskRetry(m *a2a.Message, entries []ledger.Entry) bool {
	redacted := *m
	redacted.Parts, _ = redactParts(m.Parts)
	return slices.ContainsFunc(entries, func(e ledger.Entry) bool { return repeats(&e, &redacted) })
}

// repeats reports whether the stored entry e is the user message m (ledger.Repeats). m's
// parts must be redacted, as stored ones are.
func repeats(e *ledger.Entry, m *a2a.Message) bool {
	return ledger.Repeats(e, &ledger.Entry{Kind: ledger.KindUserMessage, MessageID: m.MessageID, Parts: toLedgerParts(m.Parts)})
}

// retryAnswer answers a retried message/send with the task taskID as it stands once its
// turn has ended, unless the send asked to return immediately.
func (r *Runner) retryAnswer(ctx context.Context, peer string, p *a2a.SendParams, taskID string) (a2a.SendResult, error) {
	r.log.InfoContext(ctx, "a retried send answered with its task; no turn started",
		"message_id", p.Message.MessageID, "task_id", taskID)
	r.obs.Retried()
	if !p.Config.ReturnImmediately {
		if err := r.awaitTurn(ctx, peer, taskID); err != nil {
			return a2a.SendResult{}, err
		}
	}
	t, err := r.loadTask(ctx, peer, taskID, p.Config.HistoryLength)
	if err != nil {
		return a2a.SendResult{}, err
	}
	return a2a.SendResult{Task: t}, nil
}

// awaitTurn waits until no turn runs task taskID: one here has finished, or, over a
// shared store, its stream (as a retried stream follows it) has ended. A stream the peer
// has no slot for is not waited for: the task is answered as it stands.
func (r *Runner) awaitTurn(ctx context.Context, peer, taskID string) error {
	r.mu.Lock()
	lt, running := r.live[taskID]
	r.mu.Unlock()
	switch {
	case running:
		select {
		case <-lt.finished:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case !r.cfg.SharedStore:
		return nil
	}
	s, err := r.subscribe(ctx, peer, &a2a.SubscribeParams{ID: taskID}, true)
	if err != nil {
		return nil
	}
	defer s.Close()
	for {
		if _, err := s.Next(ctx); err != nil {
			return ctx.Err()
		}
	}
}

// retryStream answers a retried message/stream with the task taskID's stream, as
// SubscribeToTask gives it from the start: its snapshot, then, while it runs, its events
// to its end. A task that has ended is its snapshot alone.
func (r *Runner) retryStream(ctx context.Context, peer string, p *a2a.SendParams, taskID string) (a2a.Stream, error) {
	r.log.InfoContext(ctx, "a retried stream answered with its task; no turn started",
		"message_id", p.Message.MessageID, "task_id", taskID)
	r.obs.Retried()
	return r.subscribe(ctx, peer, &a2a.SubscribeParams{ID: taskID}, true)
}
