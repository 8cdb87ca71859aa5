package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/postgres"
	"github.com/a2a-gateway/gateway/turn"
)

// Ledger is what the gateway needs of its ledger, whichever backend holds it: the
// turn runner's and the operator service's interfaces, readiness, the quarantine list
// and counters. *ledger.Store (bbolt, --data-dir) and *postgres.Store (--store) implement
// it.
type Ledger interface {
	turn.Ledger
	conversations.Ledger
	Ready(ctx context.Context) error
	Quarantined() []ledger.Quarantine
	Stats() ledger.Stats
	Close() error
}

var (
	_ Ledger = (*ledger.Store)(nil)
	_ Ledger = (*postgres.Store)(nil)
)

// IsStoreURL reports whether s names a PostgreSQL store (postgres:// or postgresql://).
func IsStoreURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// OpenLedger opens the PostgreSQL store when store is a postgres:// URL, else the bbolt
// ledger in dataDir (store empty). lopts carries the options both understand (OnCommit,
// LargePartBytes, Now); the bbolt-only ones apply to bbolt. Errors: an unsupported store,
// or the backend's open error.
func OpenLedger(ctx context.Context, store, dataDir string, lopts ledger.Options, log *slog.Logger) (Ledger, error) {
	switch {
	case store == "":
		led, err := ledger.Open(filepath.Join(dataDir, "ledger.db"), lopts, log)
		if err != nil {
			return nil, fmt.Errorf("open ledger in %s: %w", dataDir, err)
		}
		return led, nil
	case IsStoreURL(store):
		return postgres.Open(ctx, store, postgres.Options{OnCommit: lopts.OnCommit, OnVerify: lopts.OnVerify, LargePartBytes: lopts.LargePartBytes, Now: lopts.Now}, log)
	}
	return nil, fmt.Errorf("--store: want a postgres://… URL (or nothing, for the bbolt ledger in --data-dir)")
}

// resyncHeads is how many of the most recently active conversations are announced again
// after the store's notifications were interrupted.
const resyncHeads = 1000

// followStore announces every append committed to a shared (PostgreSQL) store, by any
// instance, to the runner, so that live readers here follow turns that run elsewhere, and
// passes on every instance's watch signals (turn.Config.SignalWatch), so that turns here
// store their reply's chunks for subscribers elsewhere. Its goroutine stops before the
// ledger closes (closers run in reverse). A no-op on bbolt.
func (s *Server) followStore() {
	pg, ok := s.ledger.(*postgres.Store)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // exits when the closer below cancels ctx
		defer close(done)
		_ = pg.Listen(ctx, func(a postgres.Appended) {
			if a.LastSeq == 0 { // notifications were lost: announce the latest heads again
				s.resync(ctx)
				return
			}
			s.runner.Announce(ctx, a.Owner, a.ContextID, a.FirstSeq, a.LastSeq, a.Epoch)
		}, func(w postgres.Watched) { s.runner.WatchedElsewhere(w.Owner, w.ContextID) })
	}()
	s.closers.add(func(context.Context) error { cancel(); <-done; return nil })
}

// watchSignal is turn.Config.SignalWatch: on a shared (PostgreSQL) store, a NOTIFY that
// every instance's followStore passes to its runner; nil on bbolt.
func (s *Server) watchSignal() func(ctx context.Context, owner, contextID string) error {
	if pg, ok := s.ledger.(*postgres.Store); ok {
		return pg.Watch
	}
	return nil
}

// resync announces the heads of the most recently active conversations: a reader that
// missed an announcement sees a gap and catches up from the store.
func (s *Server) resync(ctx context.Context) {
	convs, err := s.ledger.List(ctx, ledger.ListOptions{Limit: resyncHeads})
	if err != nil {
		s.log.WarnContext(ctx, "live streams: could not list conversations to catch up", "err", err)
		return
	}
	for _, c := range convs {
		s.runner.Announce(ctx, c.Owner, c.ContextID, c.LastSeq, c.LastSeq, c.Epoch)
	}
}

// readyDetail is the /readyz body of a server whose ledger has quarantined conversations:
// still ready (the other conversations are served), degraded, naming each one by its
// storage key only: /readyz answers without authentication, and a contextId or a peer
// name is not for everyone (the log has them, and the reasons).
func readyDetail(q []ledger.Quarantine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ready (degraded): %d conversation(s) quarantined: their stored data is damaged (the log names them; gateway ledger verify, gateway ledger salvage)\n", len(q))
	for _, c := range q {
		fmt.Fprintf(&b, "quarantined %s\n", c.Key)
	}
	return b.String()
}
