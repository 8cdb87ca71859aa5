// Package postgres is the ledger on PostgreSQL: the same entries as the bbolt Store, byte
// for byte (the ledger package validates, encodes and hashes them), stored in tables that
// several gateway instances share. Each conversation is one row of conversations (its
// head), keyed by the "v1/<hex>" key, and its entries rows of entries keyed by (key, seq):
// the primary key and the head row, moved forward in the transaction that inserts the
// entries, keep seq gap-free; the fencing epoch is checked in that transaction against
// the locked head. Appends from concurrent callers share transactions (group commit), with
// synchronous_commit on: an acknowledged append has been committed.
package postgres

import (
	"context"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2a-gateway/gateway/ledger"
)

// Options tunes a [Store].
type Options struct {
	// LargePartBytes is the size above which a part's content moves to the artifacts
	// table. Zero value: ledger.DefaultLargePartBytes.
	LargePartBytes int
	// MaxBatch is the most Append requests one transaction carries; it also bounds the
	// queue. Zero value: 256.
	MaxBatch int
	// MaxConns bounds the connection pool. Zero value: the URL's pool_max_conns if it
	// has one, else defaultMaxConns.
	MaxConns int32
	// Now returns the current time. Zero value: time.Now.
	Now func() time.Time
	// OnCommit, when set, is called after each committed transaction that carried
	// appends, as ledger.Options.OnCommit is. It must be cheap and must not block.
	OnCommit func(d time.Duration, appends int)
	// OnVerify, when set, is told how far VerifyAll has got, as ledger.Options.OnVerify is.
	OnVerify func(done, total int)
}

// Store is the PostgreSQL ledger. It is safe for concurrent use, and several processes
// may open the same database.
type Store struct {
	pool   *pgxpool.Pool
	opts   Options
	logger *slog.Logger

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	queue    chan *pending
	wg       sync.WaitGroup

	commits, appends atomic.Uint64
}

// Open connects to the database at url ("postgres://…"), applies the embedded schema
// migrations (under an advisory lock, so that instances starting together do not race)
// and starts the group committer. The logger may be nil. Errors: a connection or
// migration failure, naming the server without its password.
func Open(ctx context.Context, url string, opts Options, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres store: parse URL: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !hasPoolMaxConns(url):
		cfg.MaxConns = max(cfg.MaxConns, defaultMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store at %s: migrate: %w", cfg.ConnConfig.Host, err)
	}
	s := &Store{pool: pool, opts: opts, logger: logger, queue: make(chan *pending, opts.MaxBatch)}
	for range committers {
		s.wg.Add(1)
		go s.commitLoop()
	}
	return s, nil
}

// committers is how many group commits may be in flight at once, each on its own
// connection: while one waits for its round trips and its WAL flush, the next gathers
// the appends queued meanwhile and sends them. Batches that share a conversation
// serialize on its head row (each locks its heads in key order, so that they never
// deadlock; the later one reads the head as the earlier one left it); two that create
// the same conversation or task conflict, and the later one is planned again from the
// heads as the earlier one left them (commitBatch), as with another instance.
const committers = 2

// defaultMaxConns is the pool size when neither Options.MaxConns nor the URL sets one:
// pgxpool's default (the larger of 4 and the CPU count) leaves the readers of a busy
// gateway (64 turns at once, each reading its conversation) queuing for a connection
// behind the committers and the listener.
const defaultMaxConns = 16

// hasPoolMaxConns reports whether the connection string sets pool_max_conns, as a URL
// query parameter or a key=value setting.
func hasPoolMaxConns(conn string) bool {
	if u, err := neturl.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return u.Query().Has("pool_max_conns")
	}
	for _, f := range strings.Fields(conn) {
		if k, _, ok := strings.Cut(f, "="); ok && k == "pool_max_conns" {
			return true
		}
	}
	return false
}

// Close stops taking appends, waits for the queued ones to commit and closes the pool.
// It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	close(s.queue)
	s.wg.Wait()
	s.pool.Close()
	return nil
}

// enter registers an Append about to enqueue; false after Close.
func (s *Store) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

// Ready reports whether the database answers. Errors: the ping's failure.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	return nil
}

// Quarantined is always empty: the database's own integrity replaces the bbolt file's
// quarantine (Verify still reports a broken chain).
func (s *Store) Quarantined() []ledger.Quarantine { return nil }

// Stats counts the commits and appended entries since Open.
func (s *Store) Stats() ledger.Stats {
	return ledger.Stats{Commits: s.commits.Load(), Appends: s.appends.Load()}
}

// errClosed wraps ledger.ErrClosed.
var errClosed = fmt.Errorf("postgres store: %w", ledger.ErrClosed)

// Append appends req's entries as [ledger.Store.Append] does, with the same errors
// (validation, ErrFenced, ErrClosed, ctx.Err() before the request was queued); a database
// failure is returned wrapped. Once queued it waits for the commit whatever ctx does.
func (s *Store) Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return ledger.AppendResult{}, err
	}
	p, err := ledger.PrepareAppend(req, s.opts.Now(), s.opts.LargePartBytes)
	if err != nil {
		return ledger.AppendResult{}, err
	}
	if !s.enter() {
		return ledger.AppendResult{}, errClosed
	}
	w := &pending{p: p, done: make(chan outcome, 1)}
	select {
	case s.queue <- w:
		s.inflight.Done()
	case <-ctx.Done():
		s.inflight.Done()
		return ledger.AppendResult{}, ctx.Err()
	}
	out := <-w.done
	if out.err != nil {
		return ledger.AppendResult{}, out.err
	}
	return ledger.AppendResult{Epoch: out.epoch, Entries: out.entries}, nil
}
