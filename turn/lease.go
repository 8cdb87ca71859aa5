package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// leases takes and gives back the leases (Locker) of the Runner's turns, cancels and push
// claims, and knows the turns of this Runner that are handing their context's lease over.
type leases struct {
	locks    Locker
	busyWait time.Duration // Config.BusyWait
	timeout  time.Duration // Config.FinalizeTimeout: bounds a release and a wait for a handover
	obs      Observer
	log      *slog.Logger

	mu sync.Mutex // guards handovers only; never held with another lock
	// handovers holds, by context key, the turns that gave their lease up on ending
	// (turnRun.handOver) and have not yet published their end and left: the next turn of
	// that context waits for the channel to close (awaitHandover).
	handovers map[string]chan struct{}
}

func newLeases(cfg *Config, locks Locker, obs Observer, log *slog.Logger) *leases {
	return &leases{locks: locks, busyWait: cfg.BusyWait, timeout: cfg.FinalizeTimeout, obs: obs, log: log,
		handovers: map[string]chan struct{}{}}
}

// acquire takes the context's lease; with a BusyWait it waits for a busy context to free
// up until the bound, then reports it held.
func (l *leases) acquire(ctx context.Context, key, holder string) (*locking.Lease, error) {
	t0 := time.Now()
	lease, err := l.locks.Acquire(ctx, key, holder)
	if errors.Is(err, locking.ErrHeld) && l.awaitEnding(ctx, key) {
		lease, err = l.locks.Acquire(ctx, key, holder) // the ending turn gave the lease up
	}
	l.obs.LeaseAcquire(time.Since(t0), err)
	if err == nil || l.busyWait <= 0 || !errors.Is(err, locking.ErrHeld) {
		return lease, err
	}
	wctx, cancel := context.WithTimeout(ctx, l.busyWait)
	defer cancel()
	for {
		if werr := l.locks.Wait(wctx, key); werr != nil {
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case wctx.Err() != nil:
				return nil, err // still held at the bound: report the last holder
			}
			return nil, werr // the lock service failed: fail closed
		}
		lease, err = l.locks.Acquire(ctx, key, holder)
		if err == nil || !errors.Is(err, locking.ErrHeld) {
			return lease, err
		}
	}
}

// claim takes key's lease at once for holder, as it is: no busy wait, no measurement,
// no handover to wait for (the outbox's push claims).
func (l *leases) claim(ctx context.Context, key, holder string) (*locking.Lease, error) {
	return l.locks.Acquire(ctx, key, holder)
}

// handingOver registers the handover of the context key's lease by the turn ending there
// (turnRun.beginHandover) and returns the channel that turn closes when it has left.
func (l *leases) handingOver(key string) chan struct{} {
	done := make(chan struct{})
	l.mu.Lock()
	l.handovers[key] = done
	l.mu.Unlock()
	return done
}

// handedOver forgets the handover done of the context key, unless a newer one replaced it.
func (l *leases) handedOver(key string, done chan struct{}) {
	l.mu.Lock()
	if l.handovers[key] == done {
		delete(l.handovers, key)
	}
	l.mu.Unlock()
}

func (l *leases) handover(key string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.handovers[key]
}

// takeLease takes the context lease of the send in, once the turn ending there has handed
// it over. A send that repeats the context's latest message while a turn holds the lease
// (retry.go) takes none: retry names that message's task. (With the lease taken, the
// append of the message checks for a repeat: start.)
// A refusal is refuse's error.
func (r *Runner) takeLease(ctx context.Context, in *inbound) (_ *locking.Lease, retry string, _ error) {
	lctx, span := r.tracer.Start(ctx, spanLease)
	lease, err := r.leases.acquire(lctx, in.key, in.taskID)
	endSpan(span, err)
	if err != nil {
		if errors.Is(err, locking.ErrHeld) && r.mayRepeat(in) {
			if task, ok, rerr := r.latestRetry(ctx, in); rerr == nil && ok {
				return nil, task, nil
			}
		}
		return nil, "", r.refuse(ctx, in.peer, in.m.ContextID, err, func(holder string) ledger.Entry {
			return auditEntry(in.peer, &in.m, "CONTEXT_BUSY", holder)
		})
	}
	if err := r.leases.awaitHandover(ctx, in.key); err != nil {
		r.leases.release(ctx, lease)
		return nil, "", err
	}
	return lease, "", nil
}

// refuse turns a failed Acquire of contextID's lease into the caller's error. A busy
// context counts the refusal and records the refused request as the entry busyAudit makes
// of the running task's id (an AUDIT_ONLY entry, which never enters the conversation): a
// *busyError. A failing lock service fails closed: an error wrapping
// locking.ErrUnavailable.
func (r *Runner) refuse(ctx context.Context, peer, contextID string, err error, busyAudit func(holder string) ledger.Entry) error {
	var held *locking.HeldError
	switch {
	case errors.As(err, &held):
		r.audits.add(ctx, auditItem{req: ledger.AppendRequest{Owner: peer, ContextID: contextID, Entries: []ledger.Entry{busyAudit(held.Holder)}}})
		r.obs.Busy()
		return &busyError{ContextID: contextID, Holder: held.Holder, Err: err}
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, locking.ErrClosed):
		return err
	}
	r.log.WarnContext(ctx, "lease unavailable", "context_key", contextid.Key(peer, contextID), "err", err)
	if !errors.Is(err, locking.ErrUnavailable) {
		err = fmt.Errorf("%w: %w", locking.ErrUnavailable, err)
	}
	return err
}

// awaitHandover waits until the turn of the context key that gave its lease up on ending
// (turnRun.handOver) has published its end and left, so that the next turn's events
// follow it on the context's feed in seq order. The wait is short: what that turn still
// does is in memory. It returns ctx's error when ctx ends first.
func (l *leases) awaitHandover(ctx context.Context, key string) error {
	done := l.handover(key)
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// awaitEnding is called after an Acquire of the context key met a held lease. When the
// holder is a turn of this Runner storing its end and giving the lease up
// (beginHandover), it waits until the turn has (bounded by FinalizeTimeout and ctx). It
// reports whether the caller should try the lease again: after that handover, and also
// when no turn of the key is ending here, because the holder may have ended, handed over
// and left between the caller's Acquire and this look (a sender preempted between the
// two was refused with CONTEXT_BUSY for a turn its client had seen end). The ledger shows
// a turn's end from its commit on, so a client that read it there (GetTask) and sends at
// once is admitted, not refused.
func (l *leases) awaitEnding(ctx context.Context, key string) bool {
	done := l.handover(key)
	if done == nil {
		return true // one more Acquire: it fails again while the holder still runs
	}
	t := time.NewTimer(l.timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// release releases lease. It runs without ctx's cancellation (a lease is released even
// after the caller has gone), bounded by FinalizeTimeout; a failure is logged, as the
// lease expires by itself.
func (l *leases) release(ctx context.Context, lease *locking.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		l.log.WarnContext(ctx, "lease release failed; it expires by itself", "err", err)
	}
}
