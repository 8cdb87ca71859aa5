package turn

import (
	"context"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// Ledger is what a turn needs of the ledger. Implemented by *ledger.Store.
type Ledger interface {
	Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error)
	TaskEntries(ctx context.Context, taskID string) (ledger.Conversation, []ledger.Entry, error)
	Conversation(ctx context.Context, owner, contextID string) (ledger.Conversation, error)
	LastBefore(ctx context.Context, owner, contextID string, beforeSeq uint64, n int, keep func(*ledger.Entry) bool) ([]ledger.Entry, error)
	TaskIDs(ctx context.Context, owner, contextID string) ([]string, error)
	List(ctx context.Context, opts ledger.ListOptions) ([]ledger.Conversation, error)
	Inflate(ctx context.Context, entries []ledger.Entry) error
}

// Locker admits one turn per context. Implemented by *locking.Local (and the Redis
// locker). Acquire returns an error wrapping locking.ErrHeld (a *locking.HeldError) when
// another holder has the key.
type Locker interface {
	Acquire(ctx context.Context, key, holder string) (*locking.Lease, error)
	// Wait blocks until key looks free (or ctx is done); used by the wait busy policy.
	Wait(ctx context.Context, key string) error
}
