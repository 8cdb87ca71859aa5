package server

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/streaming"
	"github.com/a2a-gateway/gateway/turn"
)

// rateSpec is a parsed --rate-limit: N requests per Per. The zero value is "off".
type rateSpec struct {
	N   int
	Per time.Duration
}

// off reports whether the spec admits everything.
func (r rateSpec) off() bool { return r.N == 0 }

// parseRate reads a --rate-limit value: "N/s", "N/m" or "N/h" (N a positive integer; the
// units may also be spelled sec, min, hour), or "0" (or "off") for no limit. "" is also
// no limit: the zero Config limits nothing (the flag's default is 600/m).
func parseRate(s string) (rateSpec, error) {
	v := strings.TrimSpace(s)
	if v == "" || v == "0" || strings.EqualFold(v, "off") {
		return rateSpec{}, nil
	}
	num, unit, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if !ok || err != nil || n <= 0 {
		return rateSpec{}, fmt.Errorf("--rate-limit %q: want N/s, N/m or N/h with N a positive integer (e.g. 600/m), or 0 to turn the limit off", s)
	}
	var per time.Duration
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	default:
		return rateSpec{}, fmt.Errorf("--rate-limit %q: unknown period %q; use s, m or h (e.g. 600/m)", s, unit)
	}
	return rateSpec{N: n, Per: per}, nil
}

// maxBuckets bounds the peers a rateLimiter tracks at once. Peer identities come from
// the configured tokens, so this is never reached in practice; it keeps the map bounded
// whatever happens.
const maxBuckets = 10_000

// rateLimiter is a token bucket per peer. Each peer's bucket holds up to N tokens
// (the burst equals the per-period count: a peer that was quiet may send N requests at
// once) and refills continuously, one token every Per/N; a request takes one token.
//
// The bucket is kept in its exact integer form (GCRA, the generic cell rate algorithm):
// per peer only the "theoretical arrival time" tat, the instant at which the bucket would
// be full again. A request at now is admitted when max(tat, now) + Per/N - now <= Per, and
// then tat moves to that sum; otherwise it is refused and may retry after the excess. A
// bucket whose tat has passed is full, the same as a new one, so it is dropped: the map
// holds only peers active within the last period.
type rateLimiter struct {
	interval time.Duration // Per/N: the time one token takes to refill
	window   time.Duration // Per: the time an empty bucket takes to refill
	now      func() time.Time

	mu        sync.Mutex
	tat       map[string]time.Time // peer -> when its bucket is full again
	lastSweep time.Time
}

// newRateLimiter returns a limiter for spec, or nil when spec is off (limitRate takes a nil
// limiter as "admit all"). now is time.Now when nil.
func newRateLimiter(spec rateSpec, now func() time.Time) *rateLimiter {
	if spec.off() {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	interval := max(spec.Per/time.Duration(spec.N), time.Nanosecond)
	return &rateLimiter{
		interval:  interval,
		window:    interval * time.Duration(spec.N),
		now:       now,
		tat:       map[string]time.Time{},
		lastSweep: now(),
	}
}

// Allow takes one token of peer's bucket, or reports how long until one is available. It
// never blocks beyond a short critical section.
func (l *rateLimiter) Allow(peer string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= l.window {
		l.sweep(now)
	}
	tat, ok := l.tat[peer]
	if !ok && len(l.tat) >= maxBuckets {
		l.sweep(now)
		if len(l.tat) >= maxBuckets {
			l.evictFullest()
		}
	}
	if tat.Before(now) {
		tat = now
	}
	next := tat.Add(l.interval)
	if over := next.Sub(now) - l.window; over > 0 {
		return false, over
	}
	l.tat[peer] = next
	return true, 0
}

// sweep drops the buckets that are full again. Called with mu held.
func (l *rateLimiter) sweep(now time.Time) {
	l.lastSweep = now
	for peer, tat := range l.tat {
		if !tat.After(now) {
			delete(l.tat, peer)
		}
	}
}

// evictFullest drops the bucket closest to full (the earliest tat). Called with mu held.
func (l *rateLimiter) evictFullest() {
	var peer string
	var at time.Time
	found := false
	for p, tat := range l.tat {
		if !found || tat.Before(at) {
			peer, at, found = p, tat, true
		}
	}
	delete(l.tat, peer)
}

// tracked returns how many peers have a bucket (tests).
func (l *rateLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tat)
}

// peerHandler is what the transports serve: the A2A methods (JSON-RPC over HTTP and
// /ws), the push config methods, and conversations/subscribe on /ws. *turn.Runner
// implements it; so does rateLimited, which stands in front of it.
type peerHandler interface {
	a2a.Handler
	a2a.PushHandler
	streaming.Source
}

// Interface guards: the transports find the push methods and conversations/subscribe by
// type assertion (a2a's servePush) and by type (streaming.NewHandler's Source).
var (
	_ peerHandler = (*turn.Runner)(nil)
	_ peerHandler = (*rateLimited)(nil)
)

// rateObserver counts the requests the rate limit refuses (metrics.RateLimited).
type rateObserver interface {
	RateLimited(peer string)
}

// rateLimited applies the peers' rate limit in one place, at the edge: every
// request of a peer (a call, a stream opened, a conversations/subscribe) takes one token
// of its bucket before it reaches next. A refused request is answered RATE_LIMITED
// (-32000) naming the peer and the seconds until a token is back (metadata
// "retryAfterSeconds"), is counted (rateObserver), and nothing of it runs. A request with
// no caller in its context (turn.PeerFrom is "") is passed on for next to refuse: that is a
// wiring bug, not a peer to limit. PushSupported is no request: it is passed on as is.
type rateLimited struct {
	next  peerHandler
	limit *rateLimiter
	obs   rateObserver
}

// limitRate returns h behind limit, or h itself when limit is nil (no rate limit).
func limitRate(h peerHandler, limit *rateLimiter, obs rateObserver) peerHandler {
	if limit == nil {
		return h
	}
	return &rateLimited{next: h, limit: limit, obs: obs}
}

// admit takes one token of the caller's bucket: nil, or the RATE_LIMITED error.
func (l *rateLimited) admit(ctx context.Context) error {
	peer := turn.PeerFrom(ctx)
	if peer == "" {
		return nil
	}
	ok, retry := l.limit.Allow(peer)
	if ok {
		return nil
	}
	l.obs.RateLimited(peer)
	secs := max(1, int(math.Ceil(retry.Seconds())))
	return &a2a.Error{Err: a2a.ErrRateLimited,
		Message:  fmt.Sprintf("rate limit exceeded for peer %s; retry in %ds", a2a.EchoQuote(peer), secs),
		Metadata: map[string]string{"peer": a2a.Echo(peer), "retryAfterSeconds": strconv.Itoa(secs)}}
}

// SendMessage implements a2a.Handler.
func (l *rateLimited) SendMessage(ctx context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
	if err := l.admit(ctx); err != nil {
		return a2a.SendResult{}, err
	}
	return l.next.SendMessage(ctx, p)
}

// SendStreamingMessage implements a2a.Handler.
func (l *rateLimited) SendStreamingMessage(ctx context.Context, p *a2a.SendParams) (a2a.Stream, error) {
	if err := l.admit(ctx); err != nil {
		return nil, err
	}
	return l.next.SendStreamingMessage(ctx, p)
}

// GetTask implements a2a.Handler.
func (l *rateLimited) GetTask(ctx context.Context, p *a2a.GetTaskParams) (*a2a.Task, error) {
	if err := l.admit(ctx); err != nil {
		return nil, err
	}
	return l.next.GetTask(ctx, p)
}

// ListTasks implements a2a.Handler.
func (l *rateLimited) ListTasks(ctx context.Context, p *a2a.ListTasksParams) (*a2a.ListTasksResult, error) {
	if err := l.admit(ctx); err != nil {
		return nil, err
	}
	return l.next.ListTasks(ctx, p)
}

// CancelTask implements a2a.Handler.
func (l *rateLimited) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	if err := l.admit(ctx); err != nil {
		return nil, err
	}
	return l.next.CancelTask(ctx, p)
}

// SubscribeToTask implements a2a.Handler.
func (l *rateLimited) SubscribeToTask(ctx context.Context, p *a2a.SubscribeParams) (a2a.Stream, error) {
	if err := l.admit(ctx); err != nil {
		return nil, err
	}
	return l.next.SubscribeToTask(ctx, p)
}

// SubscribeContext implements streaming.Source (conversations/subscribe).
func (l *rateLimited) SubscribeContext(ctx context.Context, contextID string, afterSeq uint64) (a2a.Stream, error) {
	if err := l.admit(ctx); err != nil {
		return nil, err
	}
	return l.next.SubscribeContext(ctx, contextID, afterSeq)
}

// PushSupported implements a2a.PushHandler; it is no request of a peer's.
func (l *rateLimited) PushSupported() bool { return l.next.PushSupported() }

// SetTaskPushConfig implements a2a.PushHandler.
func (l *rateLimited) SetTaskPushConfig(ctx context.Context, p *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	if err := l.admit(ctx); err != nil {
		return nil, err
	}
	return l.next.SetTaskPushConfig(ctx, p)
}

// GetTaskPushConfig implements a2a.PushHandler.
func (l *rateLimited) GetTaskPushConfig(ctx context.Context, p *a2a.PushConfigRef) (*a2a.TaskPushConfig, error) {
	if err := l.admit(ctx); err != nil {
		return nil, err
	}
	return l.next.GetTaskPushConfig(ctx, p)
}

// ListTaskPushConfigs implements a2a.PushHandler.
func (l *rateLimited) ListTaskPushConfigs(ctx context.Context, p *a2a.PushConfigRef) ([]a2a.TaskPushConfig, error) {
	if err := l.admit(ctx); err != nil {
		return nil, err
	}
	return l.next.ListTaskPushConfigs(ctx, p)
}

// DeleteTaskPushConfig implements a2a.PushHandler.
func (l *rateLimited) DeleteTaskPushConfig(ctx context.Context, p *a2a.PushConfigRef) error {
	if err := l.admit(ctx); err != nil {
		return err
	}
	return l.next.DeleteTaskPushConfig(ctx, p)
}
