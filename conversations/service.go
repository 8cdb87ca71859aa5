package conversations

import (
	"context"
	"errors"
	"time"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
)

// Ledger is what the service needs of the ledger. Implemented by *ledger.Store.
type Ledger interface {
	Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error)
	List(ctx context.Context, opts ledger.ListOptions) ([]ledger.Conversation, error)
	Conversation(ctx context.Context, owner, contextID string) (ledger.Conversation, error)
	ConversationsByID(ctx context.Context, contextID string) ([]ledger.Conversation, error)
	Last(ctx context.Context, owner, contextID string, n int, keep func(*ledger.Entry) bool) ([]ledger.Entry, error)
	LastBefore(ctx context.Context, owner, contextID string, beforeSeq uint64, n int, keep func(*ledger.Entry) bool) ([]ledger.Entry, error)
	Range(ctx context.Context, owner, contextID string, afterSeq uint64, limit int) ([]ledger.Entry, error)
	Inflate(ctx context.Context, entries []ledger.Entry) error
	Verify(ctx context.Context, owner, contextID string) error
	VerifyAll(ctx context.Context) (checked int, err error)
}

// Config tunes a [Service].
type Config struct {
	// Policy is the projection policy the gateway runs with, for Replay.
	Policy projection.Policy
	// Running names the task running in a conversation ("" for none); nil: nothing runs
	// (a data dir read offline).
	Running func(ctx context.Context, owner, contextID string) string
	// Link returns where the console shows a conversation, for the nodes of a call tree
	// ([Service.Calls]); nil: the nodes carry no link.
	Link func(owner, contextID string) string
}

// Service is the operator service over one ledger: every operator view (list, show,
// export, replay, verify) and the recording of outbound conversations. It is safe for
// concurrent use as far as its Ledger is.
type Service struct {
	led Ledger
	cfg Config
}

// New returns the service over led.
func New(led Ledger, cfg Config) *Service { return &Service{led: led, cfg: cfg} }

// Ref names one conversation: its original contextId and, when several owners use it,
// the owner ("" lets the service find the only one).
type Ref struct {
	ContextID string
	Owner     string
}

// Summary is one conversation as operators see it: original ids, never storage keys.
type Summary struct {
	ContextID    string    `json:"contextId"`
	Peer         string    `json:"peer"`
	Turns        int       `json:"turns"`
	Tasks        int       `json:"tasks"`
	Entries      int       `json:"entries"`
	LastSeq      uint64    `json:"lastSeq"`
	CreatedAt    time.Time `json:"createdAt"`
	LastActivity time.Time `json:"lastActivity"`
	RunningTask  string    `json:"runningTask,omitempty"`
}

func (s *Service) summary(ctx context.Context, c ledger.Conversation) Summary {
	v := Summary{ContextID: c.ContextID, Peer: c.Owner, Turns: c.Turns, Tasks: c.Tasks, Entries: c.Entries,
		LastSeq: c.LastSeq, CreatedAt: c.CreatedAt, LastActivity: c.LastActivity}
	if s.cfg.Running != nil {
		v.RunningTask = s.cfg.Running(ctx, c.Owner, c.ContextID)
	}
	return v
}

// Find resolves ref to one conversation without reading any other: with an owner, the
// conversation's derived key; without, the ledger's lookup by contextId (its by-contextId
// index or owners list, so an owner no configuration knows still resolves). Errors: a [*FieldError] for an invalid contextId
// or owner; a [*NotFoundError] when nothing matches; an [*AmbiguousError] with the
// owners when several do and ref names none; otherwise the ledger's.
func (s *Service) Find(ctx context.Context, ref Ref) (ledger.Conversation, error) {
	if err := contextid.Validate(ref.ContextID); err != nil {
		return ledger.Conversation{}, fromLedger(err)
	}
	if ref.Owner != "" {
		c, err := s.led.Conversation(ctx, ref.Owner, ref.ContextID)
		if errors.Is(err, ledger.ErrNotFound) {
			return c, &NotFoundError{ContextID: ref.ContextID, Owner: ref.Owner}
		}
		return c, fromLedger(err)
	}
	found, err := s.led.ConversationsByID(ctx, ref.ContextID)
	if err != nil {
		return ledger.Conversation{}, fromLedger(err)
	}
	switch len(found) {
	case 0:
		return ledger.Conversation{}, &NotFoundError{ContextID: ref.ContextID}
	case 1:
		return found[0], nil
	}
	owners := make([]string, len(found))
	for i, c := range found {
		owners[i] = c.Owner
	}
	return ledger.Conversation{}, &AmbiguousError{ContextID: ref.ContextID, Owners: owners}
}

// ShowOptions says which entries Show returns.
type ShowOptions struct {
	Limit int  // only the newest Limit entries (0: all)
	All   bool // include audit-only entries (rejected requests, error details)
}

// ShowResult is a conversation with its entries.
type ShowResult struct {
	Conversation Summary        `json:"conversation"`
	Entries      []ledger.Entry `json:"entries"`
	// Memory is the conversation's latest memory snapshot with each fact's evidence
	// resolved (issue #38); nil when it has none.
	Memory *MemoryView `json:"memory,omitempty"`
}

// conversationOnly keeps what belongs to the conversation itself: no audit-only entries.
func conversationOnly(e *ledger.Entry) bool { return e.Visibility != ledger.VisibilityAudit }

// Show returns the conversation ref and its entries, oldest first. Errors: those of
// [Service.Find]; a [*FieldError] for a negative limit; otherwise the ledger's.
func (s *Service) Show(ctx context.Context, ref Ref, opts ShowOptions) (ShowResult, error) {
	if opts.Limit < 0 {
		return ShowResult{}, invalid("limit", "negative")
	}
	c, err := s.Find(ctx, ref)
	if err != nil {
		return ShowResult{}, err
	}
	keep := conversationOnly
	if opts.All {
		keep = nil
	}
	n := opts.Limit
	if n <= 0 {
		n = int(c.LastSeq) + 1
	}
	entries, err := s.led.Last(ctx, c.Owner, c.ContextID, n, keep)
	if err != nil {
		return ShowResult{}, err
	}
	if entries == nil {
		entries = []ledger.Entry{}
	}
	for i := range entries {
		entries[i] = redactPush(entries[i]) // push.go
	}
	mem, err := s.showMemory(ctx, c, entries, opts.Limit > 0)
	if err != nil {
		return ShowResult{}, err
	}
	return ShowResult{Conversation: s.summary(ctx, c), Entries: entries, Memory: mem}, nil
}
