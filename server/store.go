package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/postgres"
	"github.com/a2a-gateway/gateway/turn"
)

// ledgerStore is what the gateway needs of its ledger, whichever backend holds it: the
// turn runner's and the operator service's interfaces, readiness, the quarantine list
// and counters. *ledger.Store (bbolt, --data-dir) and *postgres.Store (--store) implement
// it.
type ledgerStore interface {
	turn.Ledger
	conversations.Ledger
	Ready(ctx context.Context) error
	Quarantined() []ledger.Quarantine
	Stats() ledger.Stats
	Close() error
}

var (
	_ ledgerStore = (*ledger.Store)(nil)
	_ ledgerStore = (*postgres.Store)(nil)
)

// isStoreURL reports whether s names a PostgreSQL store (postgres:// or postgresql://).
func isStoreURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// openLedger opens the PostgreSQL store when store is a postgres:// URL, else the bbolt
// ledger in dataDir (store empty). lopts carries the options both understand (OnCommit,
// LargePartBytes, Now); the bbolt-only ones apply to bbolt. Errors: an unsupported store,
// or the backend's open error.
func openLedger(ctx context.Context, store, dataDir string, lopts ledger.Options, log *slog.Logger) (ledgerStore, error) {
	switch {
	case store == "":
		led, err := ledger.Open(filepath.Join(dataDir, "ledger.db"), lopts, log)
		if err != nil {
			return nil, fmt.Errorf("open ledger in %s: %w", dataDir, err)
		}
		return led, nil
	case isStoreURL(store):
		return postgres.Open(ctx, store, postgres.Options{OnCommit: lopts.OnCommit, OnVerify: lopts.OnVerify, LargePartBytes: lopts.LargePartBytes, Now: lopts.Now}, log)
	}
	return nil, fmt.Errorf("--store: want a postgres://… URL (or nothing, for the bbolt ledger in --data-dir)")
}

// ledgerCopyUsage heads `gateway ledger copy --help`.
const ledgerCopyUsage = `Usage: gateway ledger copy --from STORE --to STORE

Copies every conversation of one ledger into another, entry for entry with the same
hashes: a data dir (its bbolt ledger.db) into PostgreSQL (postgres://…), or back. It
verifies every source chain before copying it and every copied chain after. Interrupted,
it can be run again: a conversation already copied is verified and skipped, one copied in
part is continued. The source is only read; run it with the gateways stopped (a data
dir can be opened by one process at a time).

Flags:
`

// runLedgerCopy is `gateway ledger copy`.
func runLedgerCopy(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := newFlagSet("ledger copy")
	var from, to string
	fs.StringVar(&from, "from", "", "the ledger to copy: a data dir, or a postgres:// URL")
	fs.StringVar(&to, "to", "", "the ledger to copy into: a data dir, or a postgres:// URL")
	help := func() { fmt.Fprint(stdout, ledgerCopyUsage); printFlags(stdout, fs) }
	if _, err := parseFlags(fs, fs.Name(), args, false, help); err != nil {
		return err
	}
	if from == "" || to == "" {
		return usageError{"ledger copy needs --from and --to"}
	}
	if !isStoreURL(from) {
		if _, err := os.Stat(filepath.Join(from, "ledger.db")); err != nil {
			return fmt.Errorf("--from %s: no ledger: %w", from, err)
		}
	}
	src, err := openStore(ctx, from, stderr)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := openStore(ctx, to, stderr)
	if err != nil {
		return err
	}
	defer dst.Close()
	n, err := copyLedger(ctx, src, dst, stdout)
	if err != nil {
		return fmt.Errorf("ledger copy: after %d conversation(s): %w", n, err)
	}
	fmt.Fprintf(stdout, "ok: %d conversation(s) copied and verified\n", n)
	return nil
}

// openStore opens a store named by a postgres:// URL or a data dir (created if needed);
// what the ledger warns about as it opens goes to stderr.
func openStore(ctx context.Context, name string, stderr io.Writer) (ledgerStore, error) {
	if !isStoreURL(name) {
		if err := os.MkdirAll(name, 0o750); err != nil {
			return nil, err
		}
		return openLedger(ctx, "", name, ledger.Options{}, warnLogger(stderr))
	}
	return openLedger(ctx, name, "", ledger.Options{}, warnLogger(stderr))
}

// openStoreService is the conversations service over the PostgreSQL store o.store, read
// directly (gateways may be running on it: the database serves them all).
func openStoreService(ctx context.Context, o opsFlags, stderr io.Writer) (opsService, func(), error) {
	if !isStoreURL(o.store) {
		return nil, nil, usageError{"--store: want a postgres://… URL"}
	}
	led, err := openLedger(ctx, o.store, "", ledger.Options{OnVerify: o.onVerify}, nil)
	if err != nil {
		return nil, nil, err
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "gateway: reading the store at %s directly\n", redactURL(o.store))
	}
	return conversations.New(led, conversations.Config{Policy: o.policy}), func() { _ = led.Close() }, nil
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
