package turn

import (
	"context"
	"time"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/prompt"
)

// The ledger as each part of the Runner uses it: a small interface per consumer, each
// naming the methods that consumer calls. *ledger.Store implements them all (Ledger).

// Ledger is the ledger a Runner is given (New): the union of what its parts use.
// Implemented by *ledger.Store.
type Ledger interface {
	turnStore
	taskReader
	auditStore
	recoveryStore
	pushConfigStore
	outboxStore
}

// turnStore is how a turn and the requests that change a conversation write it
// (admit.go, execute.go, chunks.go, tools.go; CancelTask, the push config methods), and
// what admission reads to begin a turn.
type turnStore interface {
	Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error)
	// ConversationRunning reads a conversation's head and its running tasks together
	// (planBegin, over a shared store).
	ConversationRunning(ctx context.Context, owner, contextID string) (ledger.Conversation, []string, error)
	// prompt.Reader reads the history given to the agent (LastBefore, Inflate); LastBefore
	// also reads the latest message a retried send may repeat (latestRetry).
	prompt.Reader
}

// taskReader reads tasks and their streams (tasks.go, subscribe.go, events.go, shared.go;
// a follow-up's check of its task, continueTask).
type taskReader interface {
	TaskEntries(ctx context.Context, taskID string) (ledger.Conversation, []ledger.Entry, error)
	Inflate(ctx context.Context, entries []ledger.Entry) error
	Range(ctx context.Context, owner, contextID string, afterSeq uint64, limit int) ([]ledger.Entry, error)
	List(ctx context.Context, opts ledger.ListOptions) ([]ledger.Conversation, error)
	TaskIDs(ctx context.Context, owner, contextID string) ([]string, error)
}

// auditStore is what the audit writer needs (audit.go): whether a conversation exists,
// and the append.
type auditStore interface {
	Conversation(ctx context.Context, owner, contextID string) (ledger.Conversation, error)
	Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error)
}

// recoveryStore is the recovery's view (recover.go).
type recoveryStore interface {
	// RunningTasks lists the tasks started and not settled since.
	RunningTasks(ctx context.Context) ([]ledger.RunningTask, error)
	TaskEntries(ctx context.Context, taskID string) (ledger.Conversation, []ledger.Entry, error)
	Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error)
}

// pushConfigStore reads the push config index (ledger/push.go) for pushConfigs
// (push.go): a task's live configs, a peer's config count.
type pushConfigStore interface {
	PushConfigs(ctx context.Context, owner, taskID string) ([]ledger.Entry, error)
	PushConfigCount(ctx context.Context, owner string) (int, error)
}

// outboxStore is the push outbox's (outbox.go): the pending outbox entries, a task's
// entries (its attempts, its owner), and the append of an attempt.
type outboxStore interface {
	PendingPush(ctx context.Context, limit int) ([]ledger.PendingPush, error)
	TaskEntries(ctx context.Context, taskID string) (ledger.Conversation, []ledger.Entry, error)
	Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error)
}

// PushGuard checks a push notification URL when a peer sets it (the SSRF guard of package
// push; DESIGN N-1). A non-nil error refuses the config: the peer gets invalid params
// carrying the error's message, and nothing is stored. It must be safe for concurrent use.
type PushGuard interface {
	CheckURL(ctx context.Context, rawURL string) error
}

// Locker admits one turn per context. Implemented by *locking.Local (and the Redis
// locker). Acquire returns an error wrapping locking.ErrHeld (a *locking.HeldError) when
// another holder has the key.
type Locker interface {
	Acquire(ctx context.Context, key, holder string) (*locking.Lease, error)
	// Wait blocks until key looks free (or ctx is done); used by the wait busy policy.
	Wait(ctx context.Context, key string) error
	// Holder returns the holder of key, "" when it is free, without taking it; Recover
	// looks with it, so that it never makes a context busy.
	Holder(ctx context.Context, key string) (string, error)
}

// Observer receives the runner's measurements (metrics). Every method must be cheap and
// must not block; a nil Observer in Config observes nothing.
type Observer interface {
	// TurnDone: a turn ended in state (a2a task state, e.g. "completed") after d; ctx is
	// the turn's (its span: the trace id of a metric's exemplar).
	TurnDone(ctx context.Context, state string, d time.Duration)
	// Busy: a request (a send, or a cancel of a parked task) was refused with CONTEXT_BUSY.
	Busy()
	// Retried: a send was answered as a retry of a stored message (retry.go); no turn ran.
	Retried()
	// LimitExceeded: a request was refused for a size limit; what names it ("parts",
	// "part_bytes", "message_bytes", "streams").
	LimitExceeded(what string)
	// LeaseAcquire: taking a context's lease took d; err is nil, held, or a failure.
	LeaseAcquire(d time.Duration, err error)
	// AgentDone: the agent backend's reply took d; err is its error (nil on success).
	AgentDone(d time.Duration, err error)
	// Projection: the request given to the agent was bytes long, and its first
	// stablePrefix bytes equal the start of the previous turn's request in the same
	// context (prevBytes long; 0 when there was none).
	Projection(bytes, prevBytes, stablePrefix int)
	// ProviderCache: the provider reported input prompt tokens for a turn, cached of
	// them read from its prompt cache.
	ProviderCache(input, cached int64)
}
