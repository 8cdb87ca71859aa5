//go:build integration

package locking

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

func init() {
	lockerImpls = append(lockerImpls, lockerImpl{name: "redis", open: func(t *testing.T) locker {
		return openRedis(t, redistest.Start(t), nil)
	}})
}

// openRedis opens a Redis locker on addr with a key prefix unique to the test (TTL 2s,
// OpTimeout 1s unless edit changes them), closed in t.Cleanup.
func openRedis(t testing.TB, addr string, edit func(*RedisConfig)) *Redis {
	t.Helper()
	cfg := RedisConfig{Addr: addr, KeyPrefix: redistest.Prefix(t), TTL: 2 * time.Second, OpTimeout: time.Second}
	if edit != nil {
		edit(&cfg)
	}
	r, err := NewRedis(context.Background(), cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("NewRedis(%s) error = %v, want nil", addr, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close() error = %v", err)
		}
	})
	return r
}

// second opens another locker (another gateway instance) on r's server and key prefix.
func second(t *testing.T, r *Redis) *Redis {
	t.Helper()
	return openRedis(t, r.cfg.Addr, func(c *RedisConfig) { c.KeyPrefix, c.TTL, c.OpTimeout = r.cfg.KeyPrefix, r.cfg.TTL, r.cfg.OpTimeout })
}

func isLost(l *Lease) bool {
	select {
	case <-l.Lost():
		return true
	default:
		return false
	}
}

// slack is what a busy machine may add to a bound the code promises (OpTimeout, TTL):
// far below what a hang or a missing timeout would cost, far above scheduling delays.
const slack = 2 * time.Second

// waitLost waits for l.Lost() to close (a hang guard from the test's deadline bounds the
// wait; tests that promise a bound measure it themselves).
func waitLost(t *testing.T, l *Lease) {
	t.Helper()
	testutil.Closed(t, l.Lost(), "Lost() to close")
}

// eventually retries f until it returns nil (see testutil.WaitFor).
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	if !testutil.Until(testutil.Deadline(t), func() bool { err = f(); return err == nil }) {
		t.Fatalf("%s: still failing at the test's deadline: %v", what, err)
	}
}

func TestRedis_StoredValue(t *testing.T) {
	t.Parallel()
	r := openRedis(t, redistest.Start(t), nil)
	lease := mustAcquire(t, r, "ctx:abc", "task-1")
	defer mustRelease(t, lease)
	rkey := r.cfg.KeyPrefix + "ctx:abc"
	v, err := r.client.Get(t.Context(), rkey).Result()
	if err != nil || v != "task-1\x00"+lease.Token() {
		t.Fatalf("GET %s = %q, %v, want holder NUL token", rkey, v, err)
	}
	pttl, err := r.client.PTTL(t.Context(), rkey).Result()
	if err != nil || pttl <= 0 || pttl > r.cfg.TTL {
		t.Fatalf("PTTL %s = %v, %v, want in (0, %v]", rkey, pttl, err, r.cfg.TTL)
	}
}

func TestRedis_RenewalKeepsLeaseAlive(t *testing.T) {
	t.Parallel()
	// Long enough that a busy machine's scheduling delays stay far below it; the test
	// waits for renewals, not for a time.
	const ttl = time.Second
	r := openRedis(t, redistest.Start(t), func(c *RedisConfig) { c.TTL = ttl })
	var attempts atomic.Int32
	r.renewHook = func(context.Context, string) { attempts.Add(1) }
	other := second(t, r)
	lease := mustAcquire(t, r, "k", "h1")
	// Four renewals done (the fifth has begun): 4×TTL/3 after the acquire, past the TTL
	// the key was set with.
	testutil.WaitFor(t, "four renewals", func() bool { return attempts.Load() >= 5 })
	if isLost(lease) {
		t.Fatal("Lost() closed while the lease was held and renewed")
	}
	wantHolder(t, other, "k", "h1")
	if _, err := other.Acquire(t.Context(), "k", "h2"); !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire() past 3×TTL error = %v, want %v", err, ErrHeld)
	}
	mustRelease(t, lease)
	wantHolder(t, other, "k", "")
}

// R3(b): a holder paused past its TTL (GC, SIGSTOP) loses the key to another instance;
// when it resumes its renewal finds the key gone, Lost fires, and its Release leaves the
// new holder's key alone.
func TestRedis_PausedHolderLosesLease(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	r := openRedis(t, redistest.Start(t), func(c *RedisConfig) { c.TTL = ttl })
	gate, paused := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.renewHook = func(ctx context.Context, _ string) {
		once.Do(func() { close(paused) })
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	// The other instance holds its lease with a long TTL: what is tested is a's loss, and
	// b's renewals (every TTL/3) must not have to keep up with a 300 ms TTL on a busy
	// machine until the test releases b (make test saw b lost there under load).
	other := openRedis(t, r.cfg.Addr, func(c *RedisConfig) { c.KeyPrefix, c.TTL, c.OpTimeout = r.cfg.KeyPrefix, time.Minute, r.cfg.OpTimeout })
	a := mustAcquire(t, r, "k", "a")
	<-paused
	var b *Lease
	eventually(t, "Acquire by another instance", func() error {
		var err error
		b, err = other.Acquire(t.Context(), "k", "b")
		return err
	})
	if isLost(a) {
		t.Fatal("Lost() closed while the holder was paused; want it noticed on resume")
	}
	close(gate)
	waitLost(t, a)
	if err := a.Release(t.Context()); !errors.Is(err, ErrLost) {
		t.Fatalf("Release() of the lost lease error = %v, want %v", err, ErrLost)
	}
	wantHolder(t, other, "k", "b")
	mustRelease(t, b)
}

func TestRedis_TakenOverLeaseIsLost(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	r := openRedis(t, redistest.Start(t), func(c *RedisConfig) { c.TTL = ttl })
	lease := mustAcquire(t, r, "k", "a")
	rkey := r.cfg.KeyPrefix + "k"
	if err := r.client.Set(t.Context(), rkey, "intruder\x00tok", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.client.Del(context.Background(), rkey).Err() })
	waitLost(t, lease) // the next renewal (every TTL/3) sees the foreign value
	if err := lease.Release(t.Context()); !errors.Is(err, ErrLost) {
		t.Fatalf("Release() error = %v, want %v", err, ErrLost)
	}
	wantHolder(t, r, "k", "intruder")
}

// Released between renewals, a lease whose key expired is reported lost.
func TestRedis_ReleaseAfterExpiry(t *testing.T) {
	t.Parallel()
	r := openRedis(t, redistest.Start(t), nil)
	lease := mustAcquire(t, r, "k", "a")
	if err := r.client.Del(t.Context(), r.cfg.KeyPrefix+"k").Err(); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(t.Context()); !errors.Is(err, ErrLost) {
		t.Fatalf("Release() error = %v, want %v", err, ErrLost)
	}
	if !isLost(lease) {
		t.Fatal("Lost() not closed after Release found the key gone")
	}
}

// R2: Redis dies. New acquires fail fast with ErrUnavailable, readiness fails, a held
// lease is declared lost once its TTL has passed without renewal, and after a restart
// the locker works again by itself.
func TestRedis_ServerDown(t *testing.T) {
	t.Parallel()
	const ttl, opTimeout = 400 * time.Millisecond, 300 * time.Millisecond
	srv := redistest.StartServer(t)
	r := openRedis(t, srv.Addr(), func(c *RedisConfig) { c.TTL, c.OpTimeout = ttl, opTimeout })
	held := mustAcquire(t, r, "held", "a")

	srv.Stop()
	stopped := time.Now()
	start := time.Now()
	if lease, err := r.Acquire(t.Context(), "k", "b"); !errors.Is(err, ErrUnavailable) || lease != nil {
		t.Fatalf("Acquire() with Redis down = %v, %v, want nil, %v", lease, err, ErrUnavailable)
	}
	if d := time.Since(start); d > opTimeout+slack {
		t.Errorf("Acquire() with Redis down took %v, want ≤ OpTimeout (%v) + %v", d, opTimeout, slack)
	}
	if err := r.Ping(t.Context()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ping() with Redis down error = %v, want %v", err, ErrUnavailable)
	}
	if _, err := r.Holder(t.Context(), "held"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Holder() with Redis down error = %v, want %v", err, ErrUnavailable)
	}
	waitLost(t, held)
	if d := time.Since(stopped); d > ttl+opTimeout+slack {
		t.Errorf("lease declared lost %v after Redis went down, want ≤ TTL + OpTimeout (+ %v)", d, slack)
	}

	srv.Restart()
	eventually(t, "Ping after restart", func() error { return r.Ping(t.Context()) })
	lease := mustAcquire(t, r, "k", "b")
	mustRelease(t, lease)
	if err := held.Release(t.Context()); !errors.Is(err, ErrLost) {
		t.Fatalf("Release() of the lease lost in the outage error = %v, want %v", err, ErrLost)
	}
}

// R2: a Redis restart (no persistence) forgets every lease; holders learn it at their
// next renewal.
func TestRedis_RestartLosesLeases(t *testing.T) {
	t.Parallel()
	const ttl = 600 * time.Millisecond
	srv := redistest.StartServer(t)
	r := openRedis(t, srv.Addr(), func(c *RedisConfig) { c.TTL = ttl })
	lease := mustAcquire(t, r, "k", "a")
	srv.Restart()
	waitLost(t, lease)
	if err := lease.Release(t.Context()); !errors.Is(err, ErrLost) {
		t.Fatalf("Release() error = %v, want %v", err, ErrLost)
	}
	eventually(t, "Acquire after restart", func() error {
		l, err := r.Acquire(t.Context(), "k", "b")
		if err == nil {
			mustRelease(t, l)
		}
		return err
	})
}

// A hung server (SIGSTOP: connections open, nothing answers) costs OpTimeout per call,
// not a hang.
func TestRedis_ServerHung(t *testing.T) {
	t.Parallel()
	const opTimeout = 300 * time.Millisecond
	srv := redistest.StartServer(t)
	r := openRedis(t, srv.Addr(), func(c *RedisConfig) { c.OpTimeout = opTimeout })
	mustRelease(t, mustAcquire(t, r, "warm", "a")) // a pooled connection exists

	srv.Pause()
	start := time.Now()
	if lease, err := r.Acquire(t.Context(), "k", "b"); !errors.Is(err, ErrUnavailable) || lease != nil {
		t.Fatalf("Acquire() with Redis hung = %v, %v, want nil, %v", lease, err, ErrUnavailable)
	}
	if d := time.Since(start); d > opTimeout+slack {
		t.Errorf("Acquire() with Redis hung took %v, want ≤ OpTimeout (%v) + %v", d, opTimeout, slack)
	}
	if err := r.Ping(t.Context()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ping() with Redis hung error = %v, want %v", err, ErrUnavailable)
	}
	srv.Resume()
	eventually(t, "Ping after resume", func() error { return r.Ping(t.Context()) })
	mustRelease(t, mustAcquire(t, r, "k2", "c"))
	// The SET that timed out was still applied when the server resumed (the documented
	// caveat): "k" stays held under "b", without a renewer, until its TTL passes.
	wantHolder(t, r, "k", "b")
}

// L-3: the gateway starts while Redis is down and recovers without a restart.
func TestNewRedis_ServerDownAtStart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	srv.Stop()
	r := openRedis(t, srv.Addr(), func(c *RedisConfig) { c.OpTimeout = 300 * time.Millisecond })
	if err := r.Ping(t.Context()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ping() error = %v, want %v", err, ErrUnavailable)
	}
	srv.Restart()
	eventually(t, "Ping after Redis came up", func() error { return r.Ping(t.Context()) })
	mustRelease(t, mustAcquire(t, r, "k", "a"))
}

// A server that answers but refuses us is a configuration fault: NewRedis fails.
func TestNewRedis_ConfigFault(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t)
	if r, err := NewRedis(t.Context(), RedisConfig{Addr: addr, DB: 1000}, nil); err == nil {
		_ = r.Close()
		t.Fatal("NewRedis(DB 1000 of 16) error = nil, want an error")
	}
}

// Close gives up held leases: Lost fires, the key is deleted, Release reports ErrClosed.
func TestRedis_CloseGivesUpLeases(t *testing.T) {
	t.Parallel()
	r := openRedis(t, redistest.Start(t), nil)
	other := second(t, r)
	lease := mustAcquire(t, r, "k", "a")
	if err := r.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if !isLost(lease) {
		t.Fatal("Lost() not closed by Close")
	}
	wantHolder(t, other, "k", "")
	if err := lease.Release(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Release() after Close error = %v, want %v", err, ErrClosed)
	}
}

// The renewal goroutine and in-flight Waits end with Close.
func TestRedis_CloseStopsWait(t *testing.T) {
	t.Parallel()
	r := openRedis(t, redistest.Start(t), nil)
	other := second(t, r)
	lease := mustAcquire(t, other, "k", "a")
	defer mustRelease(t, lease)
	done := make(chan error, 1)
	go func() { done <- r.Wait(context.Background(), "k") }()
	// Wait is polling: the server has answered an EXISTS (only Wait sends one).
	testutil.WaitFor(t, "Wait to poll the key", func() bool { return existsCalls(t, r) > 0 })
	if err := r.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait() interrupted by Close error = %v, want %v", err, ErrClosed)
	}
}

// existsCalls returns how many EXISTS commands r's server has answered (INFO
// commandstats).
func existsCalls(t *testing.T, r *Redis) int {
	t.Helper()
	info, err := r.client.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	_, rest, ok := strings.Cut(info, "cmdstat_exists:calls=")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	return n
}
