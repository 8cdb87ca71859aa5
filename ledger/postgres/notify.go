package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-gateway/gateway/ledger"
)

// notifyChannel is the LISTEN/NOTIFY channel on which every committed append is
// announced; PostgreSQL delivers a notification when (and only if) its transaction
// commits, in commit order.
const notifyChannel = "gateway_ledger_appends"

// watchChannel is the LISTEN/NOTIFY channel on which an instance says that a reader of
// its follows a conversation (see [Store.Watch]).
const watchChannel = "gateway_conversation_watch"

// Appended announces entries FirstSeq..LastSeq of a conversation, committed by some
// instance, in the conversation's epoch Epoch (0 from an instance of an earlier build).
type Appended struct {
	Owner     string `json:"o"`
	ContextID string `json:"c"`
	FirstSeq  uint64 `json:"f"`
	LastSeq   uint64 `json:"l"`
	Epoch     uint64 `json:"e,omitempty"`
}

// notify queues the append's announcement in tx (sent at its commit). A payload over
// PostgreSQL's 8000-byte limit (a very long contextId) is not sent: listeners then catch
// up at the next announcement of the conversation.
func notify(ctx context.Context, tx pgx.Tx, p *ledger.Prepared, entries []ledger.Entry) error {
	last := &entries[len(entries)-1]
	b, err := json.Marshal(Appended{Owner: p.Owner(), ContextID: p.ContextID(), FirstSeq: entries[0].Seq, LastSeq: last.Seq, Epoch: last.Epoch})
	if err != nil || len(b) >= 8000 {
		return err
	}
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, string(b))
	return err
}

// Watched says that a reader on some instance follows the conversation (Owner,
// ContextID) live (see [Store.Watch]).
type Watched struct {
	Owner     string `json:"o"`
	ContextID string `json:"c"`
}

// Watch tells every listening instance (this one's too) that a reader here follows the
// conversation (owner, contextID) live: an instance running a turn of it then stores the
// reply's chunks as they stream, for this reader to read from the store. A reader repeats
// it while it reads; the signal is not stored, so one that is lost (or a payload over
// PostgreSQL's 8000-byte limit, not sent) only delays the reply's text until the next
// one or the turn's end.
func (s *Store) Watch(ctx context.Context, owner, contextID string) error {
	b, err := json.Marshal(Watched{Owner: owner, ContextID: contextID})
	if err != nil || len(b) >= 8000 {
		return err
	}
	_, err = s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, watchChannel, string(b))
	return err
}

// Listen calls fn with every append any instance commits to the store (this one's too),
// in commit order, and watched (when not nil) with every [Store.Watch] signal, until ctx
// is done; it returns ctx.Err() then. It holds one connection of the pool. Each time its
// LISTEN is in effect (the first time, and after every reconnect when the connection was
// lost) it calls fn with a zero Appended ("something may have been missed: catch up from
// the store"): an append committed before that call may not have been announced, every one
// after it is. A signal lost that way delays readers, it never drops an entry (they read
// the store). fn and watched run on Listen's goroutine and must not block for long.
func (s *Store) Listen(ctx context.Context, fn func(Appended), watched func(Watched)) error {
	for {
		err := s.listenOnce(ctx, fn, watched)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.logger.WarnContext(ctx, "postgres store: lost the append notifications; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, fn func(Appended), watched func(Watched)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	if watched != nil {
		if _, err := conn.Exec(ctx, "LISTEN "+watchChannel); err != nil {
			return err
		}
	}
	// Listening from here on: what was committed before (while this instance started, or
	// while the connection was lost) is caught up from the store.
	fn(Appended{})
	defer func() {
		// The connection goes back to the pool: stop listening on it (or drop it).
		uctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, "UNLISTEN *"); err != nil {
			_ = conn.Conn().Close(uctx)
		}
	}()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == watchChannel {
			var w Watched
			if err := json.Unmarshal([]byte(n.Payload), &w); err != nil {
				return errors.Join(errors.New("undecodable watch notification"), err)
			}
			watched(w)
			continue
		}
		var a Appended
		if err := json.Unmarshal([]byte(n.Payload), &a); err != nil {
			return errors.Join(errors.New("undecodable append notification"), err)
		}
		fn(a)
	}
}
