package locking

import (
	"context"
	"crypto/tls"
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
	// DefaultTTL is the lease lifetime in Redis.
	DefaultTTL = 30 * time.Second
	// DefaultCheckInterval is the longest a held lease goes without a renewal, which also
	// checks that the key is still ours; it is TTL/3 for a shorter TTL.
	DefaultCheckInterval = 500 * time.Millisecond
	// DefaultOpTimeout bounds each Redis call.
	DefaultOpTimeout = 2 * time.Second
)

// minTTL is the shortest lease TTL accepted: it is renewed at least every TTL/3.
const minTTL = 10 * time.Millisecond

// maxWaitPoll bounds the polling interval of [Redis.Wait].
const maxWaitPoll = 50 * time.Millisecond

// RedisConfig configures [NewRedis]. The zero value of every field but Addr means its
// default.
type RedisConfig struct {
	// Addr is the server's host:port. Required.
	Addr string
	// Username is sent with AUTH (an ACL user); "" is the default user.
	Username string
	// Password is sent with AUTH (HELLO) on every connection; "" sends none.
	Password string
	// TLS, when set, makes every connection TLS with this configuration (rediss://).
	TLS *tls.Config
	// DB is the database index to SELECT; 0 is the default database.
	DB int
	// KeyPrefix is put in front of every leased key; "" means [DefaultKeyPrefix].
	KeyPrefix string
	// TTL is the lease lifetime in Redis, renewed every CheckInterval while the lease is
	// held; a holder that stops renewing loses the key after at most TTL. 0 means
	// [DefaultTTL]; it must be at least 10ms.
	TTL time.Duration
	// CheckInterval is how often a held lease is renewed. Each renewal is a
	// compare-and-PEXPIRE, so it also checks that the key is still ours: a lease whose key
	// is gone or someone else's (Redis restarted empty, a takeover) is lost, and its
	// holder told through [Lease.Lost], within about CheckInterval plus one OpTimeout. A
	// second holder can run meanwhile, so keep it short. 0 means the smaller of TTL/3 and
	// [DefaultCheckInterval]; it must not exceed TTL/3.
	CheckInterval time.Duration
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
	if c.CheckInterval == 0 {
		c.CheckInterval = max(min(c.TTL/3, DefaultCheckInterval), time.Millisecond)
	}
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("redis addr is required"))
	}
	if c.TTL < minTTL {
		errs = append(errs, fmt.Errorf("lease ttl %v is below %v", c.TTL, minTTL))
	}
	if c.CheckInterval < 0 || c.CheckInterval > c.TTL/3 {
		errs = append(errs, fmt.Errorf("lease check interval %v is not within (0, ttl/3 = %v]", c.CheckInterval, c.TTL/3))
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
// return 1 when the key was ours and 0 otherwise. deleteIfOurs runs releaseScript
// (EVALSHA); the other callers send the source with EVAL, which Redis caches.
var releaseScript = redis.NewScript(releaseSource)

// renewSource is the compare-and-PEXPIRE script.
const renewSource = `if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`

// releaseSource is the compare-and-DEL script.
const releaseSource = `if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`

// Redis is the lease for several gateway instances sharing one Redis server
// (DESIGN L-2): one holder per key across every instance. It owns its go-redis client.
// Its methods are safe for concurrent use.
//
// A key is stored as KeyPrefix+key with the value holder NUL token. Each lease has a
// renewal timer (time.AfterFunc, so a lease costs no goroutine while it waits) that fires
// every CheckInterval; each firing runs one renewal attempt (sent in the shared pipeline
// of the batcher, so the renewals of concurrent leases cost one round trip) and re-arms
// the timer. [Lease.Lost] is closed when a renewal finds the key gone or someone else's,
// when no renewal has succeeded for a whole TTL (counted from the moment the last
// successful one was sent, so never after the key can have expired), and on Close.
//
// [Lease.Release] stops the timer, cancels and waits for an attempt in flight, then
// deletes the key if it still holds our token. It returns nil when it did, an error
// wrapping [ErrLost] when the lease had been lost (the key expired or was taken over;
// another holder's key is never deleted), an error wrapping [ErrClosed] after Close, and
// one wrapping [ErrUnavailable] when Redis fails (the key then expires by itself within
// TTL). Every lease must be released, or it is renewed until Close.
type Redis struct {
	cfg    RedisConfig
	client *redis.Client
	// batch carries the per-turn commands (acquire's SET NX and GET, release's
	// compare-and-DEL) of concurrent turns in shared pipelines (see batcher).
	batch *batcher
	log   *slog.Logger

	mu      sync.Mutex               // guards closed, leases and the wg.Add of a new operation
	closed  bool                     // set by Close; refuses new operations
	leases  map[*redisLease]struct{} // held leases not yet released: Close gives them up
	closing chan struct{}            // closed by Close: stops Wait polls
	wg      sync.WaitGroup           // in-flight operations and renewal attempts; Close waits for it

	// renewHook, if set (tests only, before the first Acquire), runs before every
	// renewal attempt with the attempt's context (canceled by Release and Close);
	// blocking in it simulates a paused holder.
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
		Addr:      cfg.Addr,
		Username:  cfg.Username,
		Password:  cfg.Password,
		DB:        cfg.DB,
		TLSConfig: cfg.TLS,
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
		// RESP2: the lease commands need nothing of RESP3, and with RESP3 go-redis
		// checks for push notifications before reading every pipeline's replies (~4% of
		// the CPU of an acquire+release cycle at 64 concurrent leases). The identity
		// (CLIENT SETINFO) is one round trip per new connection, for nothing we use.
		Protocol:        2,
		DisableIdentity: true,
	})
	r := &Redis{
		cfg:     cfg,
		client:  client,
		batch:   newBatcher(client, cfg.OpTimeout),
		log:     logger.With("component", "locking"),
		leases:  make(map[*redisLease]struct{}),
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

// begin registers an operation that Close must wait for; the caller calls r.wg.Done when
// it ends (begin returns no func: a method value would cost an allocation per call). It
// returns [ErrClosed] after Close.
func (r *Redis) begin() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.wg.Add(1)
	return nil
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

// Acquire takes key for holder with SET NX PX TTL and renews it every CheckInterval until
// [Lease.Release]; the caller must release every lease it gets. It returns a
// [*HeldError] (unwrapping to [ErrHeld]) naming the current holder when the key is held
// (Holder is "" if it could not be read), an error wrapping [ErrUnavailable] when Redis
// fails or does not answer within OpTimeout (see batcher for the bound), ctx's error when
// ctx ends first, and [ErrClosed] after Close. After an ErrUnavailable from a timeout the
// SET may still have been applied: the key then stays held under holder until the TTL
// passes.
func (r *Redis) Acquire(ctx context.Context, key, holder string) (*Lease, error) {
	if err := r.begin(); err != nil {
		return nil, err
	}
	defer r.wg.Done()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	token := uuid.NewString()
	rkey, value := r.cfg.KeyPrefix+key, holder+"\x00"+token
	// A key that disappears between the failed SET and the GET is tried again; three
	// rounds of that are churn, reported as held.
	for range 3 {
		sent := time.Now() // the key cannot expire before sent+TTL
		var set *redis.BoolCmd
		err := r.batch.do(ctx, func(ctx context.Context, p redis.Pipeliner) { set = p.SetNX(ctx, rkey, value, r.cfg.TTL) })
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
		var get *redis.StringCmd
		err = r.batch.do(ctx, func(ctx context.Context, p redis.Pipeliner) { get = p.Get(ctx, rkey) })
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

// newLease wraps a key just set, registers it for Close and arms its renewal timer. It
// runs inside an operation registered with begin, so the client is still open.
func (r *Redis) newLease(key, holder, token, rkey, value string, sent time.Time) (*Lease, error) {
	rl := &redisLease{rkey: rkey, value: value, valid: sent.Add(r.cfg.TTL)}
	rl.lease = &Lease{
		key: key, holder: holder, token: token,
		lost:    make(chan struct{}),
		release: func(ctx context.Context) error { return r.release(ctx, rl) },
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.deleteIfOurs(context.Background(), rl) // Close came during the SET: give the key back
		return nil, ErrClosed
	}
	r.leases[rl] = struct{}{}
	rl.mu.Lock() // the first firing reads rl.timer under rl.mu
	rl.timer = time.AfterFunc(time.Until(sent.Add(r.cfg.CheckInterval)), func() { r.renewDue(rl) })
	rl.mu.Unlock()
	r.mu.Unlock()
	return rl.lease, nil
}

// redisLease is the Redis side of a [Lease].
type redisLease struct {
	lease *Lease
	rkey  string // prefixed key
	value string // holder NUL token

	mu          sync.Mutex
	timer       *time.Timer        // fires the next renewal attempt
	ended       bool               // Release or Close began: no attempt starts, the timer is not re-armed
	stopAttempt context.CancelFunc // cancels the attempt in flight; nil when none is
	attemptDone chan struct{}      // closed when the attempt in flight has finished
	lostCause   error              // ErrLost or ErrClosed once the lease is given up
	mayHoldKey  bool               // lost by timeout: the key may still carry our value

	// Used by renewal attempts only, which run one at a time (the timer is re-armed at
	// the end of an attempt).
	valid   time.Time // the key cannot expire before this
	failing bool      // the last attempt failed
}

// markLost records why the lease was lost and closes Lost, the first time only; it
// reports whether this call did.
func (l *redisLease) markLost(cause error, mayHoldKey bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lostCause != nil {
		return false
	}
	l.lostCause, l.mayHoldKey = cause, mayHoldKey
	close(l.lease.lost)
	return true
}

// lost returns why the lease was lost (nil while it is held) and whether its key may
// still carry our value.
func (l *redisLease) lost() (cause error, mayHoldKey bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostCause, l.mayHoldKey
}

// end stops the renewals: no attempt starts after it, and an attempt in flight is
// canceled and waited for. Idempotent.
func (l *redisLease) end() {
	l.mu.Lock()
	l.ended = true
	l.timer.Stop()
	stop, done := l.stopAttempt, l.attemptDone
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done // prompt: canceling its context aborts the renewal's round trip
	}
}

// renewDue runs when a lease's timer fires: one renewal attempt, then the timer is
// re-armed unless the lease was lost or ended meanwhile.
func (r *Redis) renewDue(l *redisLease) {
	if err := r.begin(); err != nil {
		return // Close gives the lease up
	}
	defer r.wg.Done()
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	attemptDone := make(chan struct{})
	l.stopAttempt, l.attemptDone = cancel, attemptDone
	l.mu.Unlock()

	next, again := r.renew(ctx, l)
	cancel()

	l.mu.Lock()
	l.stopAttempt, l.attemptDone = nil, nil
	if again && !l.ended {
		l.timer.Reset(next)
	}
	l.mu.Unlock()
	close(attemptDone)
}

// renew is one renewal attempt: a compare-and-PEXPIRE. Its log lines name the lease key
// rather than a request: ctx is the renewal timer's own (background) context, since the
// lease outlives the request that took it and no request context may be kept for it. It returns when the next attempt
// is due, and again=false when there is none: a reply of 0 (the key is gone or someone
// else's) loses the lease at once, and so does reaching the TTL since the last
// successful renewal was sent (the key may have expired); ctx canceled (Release, Close)
// ends the renewals. After a success the next attempt is CheckInterval away; while Redis
// fails it retries every TTL/10 (at most 1s, and at most CheckInterval).
func (r *Redis) renew(ctx context.Context, l *redisLease) (next time.Duration, again bool) {
	if r.renewHook != nil {
		r.renewHook(ctx, l.lease.key)
		if ctx.Err() != nil {
			return 0, false // released while paused
		}
	}
	ttl := r.cfg.TTL
	now := time.Now()
	if !now.Before(l.valid) {
		if l.markLost(ErrLost, true) {
			r.log.WarnContext(ctx, "lease lost: not renewed within its ttl", "lease_key", l.lease.key, "ttl", ttl)
		}
		return 0, false
	}
	deadline := now.Add(r.cfg.OpTimeout)
	if l.valid.Before(deadline) {
		deadline = l.valid // a reply after valid could not save the lease
	}
	octx, cancel := context.WithDeadline(ctx, deadline)
	var cmd *redis.Cmd
	err := r.batch.do(octx, func(ctx context.Context, p redis.Pipeliner) {
		cmd = p.Eval(ctx, renewSource, []string{l.rkey}, l.value, ttl.Milliseconds()) // EVAL hits Redis's script cache
	})
	cancel()
	var n int
	if err == nil {
		n, err = cmd.Int()
	}
	switch {
	case err == nil && n == 1:
		l.valid = now.Add(ttl)
		if l.failing {
			r.log.InfoContext(ctx, "lease renewal recovered", "lease_key", l.lease.key)
			l.failing = false
		}
		return r.cfg.CheckInterval, true
	case err == nil:
		if l.markLost(ErrLost, false) {
			r.log.WarnContext(ctx, "lease lost: key expired or taken over", "lease_key", l.lease.key)
		}
		return 0, false
	case ctx.Err() != nil:
		return 0, false // released or closed while renewing
	default:
		if !l.failing {
			r.log.WarnContext(ctx, "lease renewal failed; retrying until the ttl passes",
				"lease_key", l.lease.key, "err", err)
			l.failing = true
		} else {
			r.log.DebugContext(ctx, "lease renewal failed again", "lease_key", l.lease.key, "err", err)
		}
		retry := min(max(ttl/10, time.Millisecond), time.Second, r.cfg.CheckInterval)
		return max(min(retry, time.Until(l.valid)), 0), true
	}
}

// deleteIfOurs gives a key back with compare-and-DEL, best effort under OpTimeout: a key
// it cannot delete expires after the TTL.
func (r *Redis) deleteIfOurs(ctx context.Context, l *redisLease) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	if err := releaseScript.Run(ctx, r.client, []string{l.rkey}, l.value).Err(); err != nil {
		r.log.DebugContext(ctx, "lease key not deleted; it expires by itself", "lease_key", l.lease.key, "err", err)
	}
}

// release stops the renewals, then deletes the key if it is still ours. See
// [Lease.Release] for its errors.
func (r *Redis) release(ctx context.Context, l *redisLease) error {
	l.end()
	r.mu.Lock()
	delete(r.leases, l)
	r.mu.Unlock()
	err := r.begin()
	if err != nil {
		if cause, _ := l.lost(); cause != nil {
			return fmt.Errorf("release %s: %w", l.lease.key, cause)
		}
		return fmt.Errorf("release %s: %w", l.lease.key, err)
	}
	defer r.wg.Done()
	if cause, mayHoldKey := l.lost(); cause != nil {
		if mayHoldKey {
			r.deleteIfOurs(ctx, l)
		}
		return fmt.Errorf("release %s: %w", l.lease.key, cause)
	}
	var del *redis.Cmd
	err = r.batch.do(ctx, func(ctx context.Context, p redis.Pipeliner) {
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
		l.markLost(ErrLost, false)
		return fmt.Errorf("release %s: %w", l.lease.key, ErrLost)
	}
	return nil
}

// Wait blocks until key is free (or ctx is done), without taking it, polling Redis with
// a backoff of at most 50ms. It returns an error wrapping [ErrUnavailable] when Redis
// fails, ctx's error when ctx ends first, and [ErrClosed] after (or during) Close.
func (r *Redis) Wait(ctx context.Context, key string) error {
	if err := r.begin(); err != nil {
		return err
	}
	defer r.wg.Done()
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
	if err := r.begin(); err != nil {
		return "", err
	}
	defer r.wg.Done()
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
	if err := r.begin(); err != nil {
		return err
	}
	defer r.wg.Done()
	octx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	if err := r.client.Ping(octx).Err(); err != nil {
		return unavailable(ctx, "ping", r.cfg.Addr, err)
	}
	return nil
}

// Close refuses further calls, gives up every lease still held (stops its renewals,
// closes its Lost channel, and deletes its key if still ours, best effort, in one
// pipeline; its Release then returns an error wrapping [ErrClosed]), waits for in-flight
// calls, and closes the Redis client. While Redis does not answer that can take a few
// OpTimeouts. Close is idempotent; it returns the client's close error.
func (r *Redis) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.closing)
	held := r.leases
	r.leases = nil
	r.mu.Unlock()
	var give []*redisLease
	for l := range held {
		l.end()
		if l.markLost(ErrClosed, false) {
			give = append(give, l)
		}
	}
	r.giveBack(give)
	r.wg.Wait()
	r.batch.close()
	return r.client.Close()
}

// giveBack deletes the keys of leases given up by Close with compare-and-DEL, in one
// pipeline under OpTimeout, best effort: a key it cannot delete expires after the TTL.
// No request is behind it, so its line counts the leases instead.
func (r *Redis) giveBack(leases []*redisLease) {
	if len(leases) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.OpTimeout)
	defer cancel()
	pipe := r.client.Pipeline()
	for _, l := range leases {
		pipe.Eval(ctx, releaseSource, []string{l.rkey}, l.value)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		r.log.DebugContext(ctx, "lease keys not all deleted at close; they expire by themselves", "leases", len(leases), "err", err)
	}
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
