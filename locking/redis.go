package locking

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Defaults for the zero fields of [RedisConfig].
const (
	// DefaultKeyPrefix is put in front of every leased key.
	DefaultKeyPrefix = "gateway:lease:"
	// DefaultTTL is the lease lifetime in Redis; leases are renewed every TTL/3.
	DefaultTTL = 30 * time.Second
	// DefaultOpTimeout bounds each Redis call.
	DefaultOpTimeout = 2 * time.Second
)

// minTTL is the shortest lease TTL accepted: it is renewed every TTL/3.
const minTTL = 10 * time.Millisecond

// maxWaitPoll bounds the polling interval of [Redis.Wait].
const maxWaitPoll = 50 * time.Millisecond

// RedisConfig configures [NewRedis]. The zero value of every field but Addr means its
// default.
type RedisConfig struct {
	// Addr is the server's host:port. Required.
	Addr string
	// Password is sent with AUTH (HELLO) on every connection; "" sends none.
	Password string
	// DB is the database index to SELECT; 0 is the default database.
	DB int
	// KeyPrefix is put in front of every leased key; "" means [DefaultKeyPrefix].
	KeyPrefix string
	// TTL is the lease lifetime in Redis, renewed every TTL/3 while the lease is held; a
	// holder that stops renewing loses the key after at most TTL. 0 means [DefaultTTL];
	// it must be at least 10ms.
	TTL time.Duration
	// OpTimeout bounds every Redis call (and the dial); 0 means [DefaultOpTimeout].
	OpTimeout time.Duration
}

// withDefaults fills the zero fields and reports every invalid one.
func (c RedisConfig) withDefaults() (RedisConfig, error) {
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("redis addr is required"))
	}
	if c.TTL < minTTL {
		errs = append(errs, fmt.Errorf("lease ttl %v is below %v", c.TTL, minTTL))
	}
	if c.OpTimeout < 0 {
		errs = append(errs, fmt.Errorf("redis op timeout %v is negative", c.OpTimeout))
	}
	if c.DB < 0 {
		errs = append(errs, fmt.Errorf("redis db %d is negative", c.DB))
	}
	return c, errors.Join(errs...)
}

// Lua scripts: compare the stored value (holder NUL token) with ours, then act. Both
// return 1 when the key was ours and 0 otherwise.
var (
	renewScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
	releaseScript = redis.NewScript(releaseSource)
)

// releaseSource is the compare-and-DEL script.
const releaseSource = `if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`

// Redis is the lease for several gateway instances sharing one Redis server
// (DESIGN L-2): one holder per key across every instance. It owns its go-redis client.
// Its methods are safe for concurrent use.
//
// A key is stored as KeyPrefix+key with the value holder NUL token. Each lease has one
// renewal goroutine; it closes [Lease.Lost] when a renewal finds the key gone or someone
// else's, when no renewal has succeeded for a whole TTL (counted from the moment the last
// successful one was sent, so never after the key can have expired), and on Close.
//
// [Lease.Release] stops and waits for that goroutine, then deletes the key if it still
// holds our token. It returns nil when it did, an error wrapping [ErrLost] when the lease
// had been lost (the key expired or was taken over; another holder's key is never
// deleted), an error wrapping [ErrClosed] after Close, and one wrapping [ErrUnavailable]
// when Redis fails (the key then expires by itself within TTL). Every lease must be
// released, or it is renewed until Close.
type Redis struct {
	cfg    RedisConfig
	client *redis.Client
	// batch carries the per-turn commands (acquire's SET NX and GET, release's
	// compare-and-DEL) of concurrent turns in shared pipelines (see batcher).
	batch *batcher
	log   *slog.Logger

	mu      sync.Mutex     // guards closed and the wg.Add of a new operation
	closed  bool           // set by Close; refuses new operations
	closing chan struct{}  // closed by Close: stops Wait polls and renewal goroutines
	wg      sync.WaitGroup // in-flight operations and renewal goroutines; Close waits for it

	// renewHook, if set (tests only, before the first Acquire), runs before every
	// renewal attempt with the renewal goroutine's context; blocking in it simulates a
	// paused holder.
	renewHook func(ctx context.Context, key string)
}

// NewRedis connects to the server at cfg.Addr and checks it with PING under
// cfg.OpTimeout. A server that cannot be reached is not an error: the gateway starts,
// [Redis.Ping] and [Redis.Acquire] report [ErrUnavailable] until the server answers, and
// the client reconnects by itself (so /readyz answers 503 and turns fail closed in the
// meantime). NewRedis returns an error for an invalid cfg, when the server answers PING
// with an error (a wrong password or DB: a configuration fault that waiting won't fix),
// and ctx's error when ctx ends first. logger may be nil (no logging).
func NewRedis(ctx context.Context, cfg RedisConfig, logger *slog.Logger) (*Redis, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("locking config: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if !redisLoggerSet.Swap(true) {
		// go-redis logs through a process-wide logger; route it to slog's default logger
		// (Debug: every failure it reports also reaches the caller as an error, which is
		// logged there). Not to this locker's logger: it may be closed long before
		// another locker's client logs (tests give each locker its own).
		redis.SetLogger(slogPrintf{})
	}
	client := redis.NewClient(&redis.Options{
		Addr:     cfg.Addr,
		Password: cfg.Password,
		DB:       cfg.DB,
		// Every call is bounded by OpTimeout through its context; the socket timeouts
		// are the same bound for calls whose context has no deadline.
		ContextTimeoutEnabled: true,
		DialTimeout:           cfg.OpTimeout,
		ReadTimeout:           cfg.OpTimeout,
		WriteTimeout:          cfg.OpTimeout,
		PoolTimeout:           cfg.OpTimeout,
		// Fail fast while the server is down: one dial per attempt, and one retry (on a
		// fresh connection) for a command that met a connection the server had closed.
		DialerRetries: 1,
		MaxRetries:    1,
		// Cluster-upgrade push notifications are for managed Redis; not used here.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	r := &Redis{
		cfg:     cfg,
		client:  client,
		batch:   newBatcher(client, cfg.OpTimeout),
		log:     logger.With("component", "locking"),
		closing: make(chan struct{}),
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		switch {
		case ctx.Err() != nil:
			r.batch.close()
			_ = client.Close()
			return nil, ctx.Err()
		case configFault(err):
			r.batch.close()
			_ = client.Close()
			return nil, fmt.Errorf("redis %s refused us: %v", cfg.Addr, err)
		}
		r.log.WarnContext(ctx, "redis unreachable; leases fail closed until it answers",
			"redis_addr", cfg.Addr, "err", err)
	}
	return r, nil
}

// configFault reports whether the server refused us for a reason that waiting won't fix:
// authentication, permissions, or an ERR reply such as a DB index out of range.
func configFault(err error) bool {
	var rerr redis.Error
	return redis.IsAuthError(err) || redis.IsPermissionError(err) ||
		errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "ERR ")
}

// begin registers an operation that Close must wait for. It returns [ErrClosed] after
// Close.
func (r *Redis) begin() (end func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	r.wg.Add(1)
	return r.wg.Done, nil
}

// unavailable turns a failed Redis call into the caller's error: ctx's own error when
// the caller's ctx ended, else an error wrapping [ErrUnavailable].
func unavailable(ctx context.Context, op, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return fmt.Errorf("%w: %s %s: %v", ErrUnavailable, op, key, err)
}

// holderOf extracts the holder from a stored value (holder NUL token).
func holderOf(value string) string {
	if i := strings.LastIndexByte(value, 0); i >= 0 {
		return value[:i]
	}
	return value
}

// Acquire takes key for holder with SET NX PX TTL and starts renewing it every TTL/3
// until [Lease.Release]; the caller must release every lease it gets. It returns a
// [*HeldError] (unwrapping to [ErrHeld]) naming the current holder when the key is held
// (Holder is "" if it could not be read), an error wrapping [ErrUnavailable] when Redis
// fails or does not answer within OpTimeout, ctx's error when ctx ends first, and
// [ErrClosed] after Close. After an ErrUnavailable from a timeout the SET may still have
// been applied: the key then stays held under holder until the TTL passes.
func (r *Redis) Acquire(ctx context.Context, key, holder string) (*Lease, error) {
	end, err := r.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	token := uuid.NewString()
	rkey, value := r.cfg.KeyPrefix+key, holder+"\x00"+token
	// A key that disappears between the failed SET and the GET is tried again; three
	// rounds of that are churn, reported as held.
	for range 3 {
		sent := time.Now() // the key cannot expire before sent+TTL
		octx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
		var set *redis.BoolCmd
		err := r.batch.do(octx, func(ctx context.Context, p redis.Pipeliner) { set = p.SetNX(ctx, rkey, value, r.cfg.TTL) })
		cancel()
		var ok bool
		if err == nil {
			ok, err = set.Result()
		}
		if err != nil {
			return nil, unavailable(ctx, "acquire", key, err)
		}
		if ok {
			return r.newLease(key, holder, token, rkey, value, sent)
		}
		octx, cancel = context.WithTimeout(ctx, r.cfg.OpTimeout)
		var get *redis.StringCmd
		err = r.batch.do(octx, func(ctx context.Context, p redis.Pipeliner) { get = p.Get(ctx, rkey) })
		cancel()
		var cur string
		if err == nil {
			cur, err = get.Result()
		}
		switch {
		case errors.Is(err, redis.Nil):
			continue
		case err != nil:
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			return nil, &HeldError{Key: key}
		case cur == value:
			// Our own SET, applied on a retried attempt whose first reply was lost.
			return r.newLease(key, holder, token, rkey, value, sent)
		default:
			return nil, &HeldError{Key: key, Holder: holderOf(cur)}
		}
	}
	return nil, &HeldError{Key: key}
}

// newLease wraps a key just set and starts its renewal goroutine. It runs inside an
// operation registered with begin, so the client is still open.
func (r *Redis) newLease(key, holder, token, rkey, value string, sent time.Time) (*Lease, error) {
	rl := &redisLease{rkey: rkey, value: value, done: make(chan struct{})}
	rl.lease = &Lease{
		key: key, holder: holder, token: token,
		lost:    make(chan struct{}),
		release: func(ctx context.Context) error { return r.release(ctx, rl) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	rl.cancel = cancel
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		cancel()
		r.deleteIfOurs(context.Background(), rl) // Close came during the SET: give the key back
		return nil, ErrClosed
	}
	r.wg.Go(func() { r.renew(ctx, rl, sent) }) // exits on Release, Close or loss
	r.mu.Unlock()
	return rl.lease, nil
}

// redisLease is the Redis side of a [Lease].
type redisLease struct {
	lease  *Lease
	rkey   string             // prefixed key
	value  string             // holder NUL token
	cancel context.CancelFunc // stops the renewal goroutine (Release)
	done   chan struct{}      // closed when the renewal goroutine has exited

	// Written only by the renewal goroutine before done is closed, or by release after
	// it; read after done.
	lostOnce   sync.Once
	lostCause  error // ErrLost or ErrClosed once the lease is given up
	mayHoldKey bool  // lost by timeout: the key may still carry our value
}

// markLost records why the lease was lost and closes Lost (once).
func (l *redisLease) markLost(cause error) {
	l.lostOnce.Do(func() {
		l.lostCause = cause
		close(l.lease.lost)
	})
}

// renew keeps the lease alive: every TTL/3 a compare-and-PEXPIRE. A reply of 0 (the key
// is gone or someone else's) loses the lease at once. While Redis fails it retries
// every TTL/10 (at most 1s) until TTL has passed since the last successful renewal was
// sent, when the key may have expired, and then loses the lease. It exits on Release
// (ctx canceled), on Close (giving the key back, best effort) and when the lease is
// lost.
func (r *Redis) renew(ctx context.Context, l *redisLease, sent time.Time) {
	defer close(l.done)
	ttl := r.cfg.TTL
	interval, retry := ttl/3, min(max(ttl/10, time.Millisecond), time.Second)
	valid := sent.Add(ttl) // the key cannot expire before this
	t := time.NewTimer(time.Until(sent.Add(interval)))
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.closing:
			l.markLost(ErrClosed)
			r.deleteIfOurs(context.Background(), l)
			return
		case <-t.C:
		}
		if r.renewHook != nil {
			r.renewHook(ctx, l.lease.key)
			if ctx.Err() != nil {
				continue // released while paused: the select returns
			}
		}
		now := time.Now()
		if !now.Before(valid) {
			l.mayHoldKey = true
			l.markLost(ErrLost)
			r.log.Warn("lease lost: not renewed within its ttl", "lease_key", l.lease.key, "ttl", ttl)
			return
		}
		deadline := now.Add(r.cfg.OpTimeout)
		if valid.Before(deadline) {
			deadline = valid // a reply after valid could not save the lease
		}
		octx, cancel := context.WithDeadline(ctx, deadline)
		n, err := renewScript.Run(octx, r.client, []string{l.rkey}, l.value, ttl.Milliseconds()).Int()
		cancel()
		switch {
		case err == nil && n == 1:
			valid = now.Add(ttl)
			if failing {
				r.log.Info("lease renewal recovered", "lease_key", l.lease.key)
				failing = false
			}
			t.Reset(interval)
		case err == nil:
			l.markLost(ErrLost)
			r.log.Warn("lease lost: key expired or taken over", "lease_key", l.lease.key)
			return
		case ctx.Err() != nil:
			// Released while renewing: the next select returns.
		default:
			if !failing {
				r.log.Warn("lease renewal failed; retrying until the ttl passes",
					"lease_key", l.lease.key, "err", err)
				failing = true
			} else {
				r.log.Debug("lease renewal failed again", "lease_key", l.lease.key, "err", err)
			}
			t.Reset(max(min(retry, time.Until(valid)), 0))
		}
	}
}

// deleteIfOurs gives a key back with compare-and-DEL, best effort under OpTimeout: a key
// it cannot delete expires after the TTL.
func (r *Redis) deleteIfOurs(ctx context.Context, l *redisLease) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	if err := releaseScript.Run(ctx, r.client, []string{l.rkey}, l.value).Err(); err != nil {
		r.log.Debug("lease key not deleted; it expires by itself", "lease_key", l.lease.key, "err", err)
	}
}

// release stops the renewal goroutine, waits for it, then deletes the key if it is
// still ours. See [Lease.Release] for its errors.
func (r *Redis) release(ctx context.Context, l *redisLease) error {
	l.cancel()
	<-l.done // prompt: canceling ctx aborts an in-flight renewal
	end, err := r.begin()
	if err != nil {
		if l.lostCause != nil {
			return fmt.Errorf("release %s: %w", l.lease.key, l.lostCause)
		}
		return fmt.Errorf("release %s: %w", l.lease.key, err)
	}
	defer end()
	if l.lostCause != nil {
		if l.mayHoldKey {
			r.deleteIfOurs(ctx, l)
		}
		return fmt.Errorf("release %s: %w", l.lease.key, l.lostCause)
	}
	octx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	var del *redis.Cmd
	err = r.batch.do(octx, func(ctx context.Context, p redis.Pipeliner) {
		del = p.Eval(ctx, releaseSource, []string{l.rkey}, l.value) // EVAL hits Redis's script cache
	})
	var n int
	if err == nil {
		n, err = del.Int()
	}
	if err != nil {
		return unavailable(ctx, "release", l.lease.key, err)
	}
	if n == 0 {
		l.markLost(ErrLost)
		return fmt.Errorf("release %s: %w", l.lease.key, ErrLost)
	}
	return nil
}

// Wait blocks until key is free (or ctx is done), without taking it, polling Redis with
// a backoff of at most 50ms. It returns an error wrapping [ErrUnavailable] when Redis
// fails, ctx's error when ctx ends first, and [ErrClosed] after (or during) Close.
func (r *Redis) Wait(ctx context.Context, key string) error {
	end, err := r.begin()
	if err != nil {
		return err
	}
	defer end()
	rkey := r.cfg.KeyPrefix + key
	delay := 2 * time.Millisecond
	t := time.NewTimer(delay)
	t.Stop()
	for {
		octx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
		n, err := r.client.Exists(octx, rkey).Result()
		cancel()
		if err != nil {
			return unavailable(ctx, "wait", key, err)
		}
		if n == 0 {
			return nil
		}
		t.Reset(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-r.closing:
			t.Stop()
			return ErrClosed
		}
		delay = min(2*delay, maxWaitPoll)
	}
}

// Holder returns the holder of key, or "" when it is free. It returns an error wrapping
// [ErrUnavailable] when Redis fails, and [ErrClosed] after Close.
func (r *Redis) Holder(ctx context.Context, key string) (string, error) {
	end, err := r.begin()
	if err != nil {
		return "", err
	}
	defer end()
	octx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	v, err := r.client.Get(octx, r.cfg.KeyPrefix+key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil
	case err != nil:
		return "", unavailable(ctx, "holder", key, err)
	}
	return holderOf(v), nil
}

// Ping reports whether the locker can take leases: nil when Redis answers PING within
// OpTimeout, an error wrapping [ErrUnavailable] when it does not, [ErrClosed] after
// Close. Use it for readiness.
func (r *Redis) Ping(ctx context.Context) error {
	end, err := r.begin()
	if err != nil {
		return err
	}
	defer end()
	octx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	if err := r.client.Ping(octx).Err(); err != nil {
		return unavailable(ctx, "ping", r.cfg.Addr, err)
	}
	return nil
}

// Close refuses further calls, gives up every lease still held (stops its renewal,
// deletes its key if still ours, best effort, and closes its Lost channel; its Release
// then returns an error wrapping [ErrClosed]), waits for in-flight calls, and closes the
// Redis client. While Redis does not answer that can take a few OpTimeouts. Close is
// idempotent; it returns the client's close error.
func (r *Redis) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.closing)
	r.mu.Unlock()
	r.wg.Wait()
	r.batch.close()
	return r.client.Close()
}

// redisLoggerSet makes the process-wide go-redis logger be set once, by the first locker.
var redisLoggerSet atomic.Bool

// slogPrintf adapts slog's default logger (as it is when go-redis logs) to go-redis's
// Printf logger.
type slogPrintf struct{}

func (slogPrintf) Printf(ctx context.Context, format string, v ...any) {
	l := slog.Default()
	if !l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	l.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}
