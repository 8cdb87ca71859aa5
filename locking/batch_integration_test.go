//go:build integration

package locking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/redis/go-redis/v9"
)

// TestRedis_ConcurrentCommandsShareRoundTrips: the lease commands of concurrent turns go
// out in shared pipelines, and each caller still gets its own reply.
func TestRedis_ConcurrentCommandsShareRoundTrips(t *testing.T) {
	t.Parallel()
	r := openRedis(t, redistest.Start(t), nil)
	const n = 64
	var wg sync.WaitGroup
	start := make(chan struct{})
	leases := make([]*Lease, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			leases[i], errs[i] = r.Acquire(t.Context(), fmt.Sprintf("ctx:%d", i), fmt.Sprintf("task-%d", i))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Acquire(ctx:%d) error = %v", i, err)
		}
	}
	// Every key is held by its own caller: a second Acquire names the right holder.
	for i := range n {
		var held *HeldError
		if _, err := r.Acquire(t.Context(), fmt.Sprintf("ctx:%d", i), "other"); !errors.As(err, &held) || held.Holder != fmt.Sprintf("task-%d", i) {
			t.Fatalf("Acquire(ctx:%d) again error = %v, want held by task-%d", i, err, i)
		}
	}
	for i, l := range leases {
		wg.Go(func() {
			if err := l.Release(context.Background()); err != nil {
				t.Errorf("Release(ctx:%d) error = %v", i, err)
			}
		})
	}
	wg.Wait()
	b, c := r.batch.batches.Load(), r.batch.commands.Load()
	if c < 3*n || b >= c {
		t.Errorf("%d commands in %d pipelines; want concurrent commands to share pipelines", c, b)
	}
	t.Logf("%d commands in %d pipelines (%.1f per round trip)", c, b, float64(c)/float64(b))
}

// TestRedis_BatchHonoursDeadline: a caller waits for its own deadline only, even when the
// batch before it hangs on a paused server.
func TestRedis_BatchHonoursDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	r := openRedis(t, srv.Addr(), func(c *RedisConfig) { c.OpTimeout = 2 * time.Second })
	srv.Pause()
	defer srv.Resume()
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := r.Acquire(ctx, "ctx:hung", "task")
	if took := time.Since(t0); err == nil || took > 500*time.Millisecond {
		t.Fatalf("Acquire() on a paused server = %v after %v; want an error at the caller's 150ms deadline", err, took)
	}
}

// TestRedis_BatchExpiresQueuedCommands: a command still queued when its OpTimeout has
// passed (the pipeline before it took longer) is answered with DeadlineExceeded and never
// sent, so a caller without a deadline of its own is still bounded.
func TestRedis_BatchExpiresQueuedCommands(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	// The client's socket timeout (2s) outlasts the batcher's OpTimeout (100ms) by far, so
	// the first pipeline holds the loop well past the second command's deadline, even
	// when a busy machine delays the second caller.
	const readTimeout = 2 * time.Second
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true,
		ReadTimeout: readTimeout, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	if err := client.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	b := newBatcher(client, 100*time.Millisecond)
	t.Cleanup(b.close)
	srv.Pause()
	defer srv.Resume()
	first := make(chan error, 1)
	go func() {
		first <- b.do(context.Background(), func(ctx context.Context, p redis.Pipeliner) { p.Ping(ctx) })
	}()
	// The first pipeline is on the wire (batches is counted just before Exec): the
	// loop is busy with it, so the next command waits in the queue.
	testutil.WaitFor(t, "the first pipeline", func() bool { return b.batches.Load() > 0 })
	t0 := time.Now()
	var sent bool
	err := b.do(context.Background(), func(ctx context.Context, p redis.Pipeliner) { sent = true; p.Ping(ctx) })
	took := time.Since(t0)
	if !errors.Is(err, context.DeadlineExceeded) || sent {
		t.Fatalf("queued command: do() = %v (sent %v), want %v without being sent", err, sent, context.DeadlineExceeded)
	}
	if took > readTimeout+10*time.Second {
		t.Errorf("queued command answered after %v, want about the first pipeline's %v", took, readTimeout)
	}
	if err := <-first; err != nil {
		t.Fatalf("first command: do() = %v, want nil (its reply carries the error)", err)
	}
	if c := b.commands.Load(); c != 1 {
		t.Errorf("%d commands sent, want 1 (the expired one is not)", c)
	}
}
