package turn

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
)

// Announce tells the runner that entries firstSeq..lastSeq of the conversation (owner,
// contextID) were committed to the shared store, by this instance or another (see
// Config.SharedStore). When a reader on this instance watches the context, it reads them
// from the store and publishes them to the context's live feed; readers drop what they
// have already (by seq) and catch up from the store over any gap, so a late, repeated or
// lost announcement only delays an event. epoch is the conversation's epoch after the
// append (0: unknown); a newer one than this Runner stored the conversation's latest
// message in means another instance has begun a turn there since, so a retried send
// reads the latest message again (retry.go). It must not be called for a store that is
// not shared. Errors are logged, not returned: the readers catch up at the next one.
func (r *Runner) Announce(ctx context.Context, owner, contextID string, firstSeq, lastSeq, epoch uint64) {
	key := contextid.Key(owner, contextID)
	r.seen.announced(key, epoch)
	if firstSeq == 0 || lastSeq < firstSeq || !r.feeds.Watching(key) {
		return
	}
	entries, err := r.tasks.Range(ctx, owner, contextID, firstSeq-1, int(lastSeq-firstSeq+1))
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		r.log.WarnContext(ctx, "live stream: an announced append could not be read", "context_key", key, "err", err)
		return
	}
	r.publish(ctx, owner, contextID, entries)
}

// Watching another instance's turn. A turn stores its reply's chunks only while a reader
// watches the context (writeChunks): over a shared store, a reader on another instance
// counts too. Such a reader signals Config.SignalWatch when it starts and every
// watchRefresh while it reads; every instance records the signal for watchTTL
// (WatchedElsewhere), so one lost signal does not stop the chunks, and a reader that left
// costs at most watchTTL of chunk appends. Nothing is lost when the signal is late: the
// text a turn has not stored yet goes into its next chunk or into its final reply, both of
// which the reader reads from the store after its resume point.
const (
	watchRefresh = 2 * time.Second
	watchTTL     = 3 * watchRefresh
)

// WatchedElsewhere tells the runner that a reader on some instance (maybe this one)
// follows the conversation (owner, contextID) live (see Config.SignalWatch): a turn of it
// running here stores its reply's chunks from now on, for watchTTL.
func (r *Runner) WatchedElsewhere(owner, contextID string) {
	r.feeds.WatchElsewhere(contextid.Key(owner, contextID), time.Now().Add(watchTTL))
}

// signalWatch renews the stream's watch signal when it is due (subscribers over a shared
// store only). The signal is sent by the Runner's signaller (watchSignaller), so that
// no event waits for its round trip; when the signaller's queue is full it is dropped,
// which only delays the reply's text (the next renewal carries it).
func (s *eventStream) signalWatch() {
	if !s.signal || time.Since(s.signaled) < watchRefresh {
		return
	}
	s.signaled = time.Now()
	select {
	case s.r.signals.queue <- watchSignal{s.owner, s.contextID}:
	default:
	}
}

// watchSignal is a queued Config.SignalWatch call.
type watchSignal struct{ owner, contextID string }

// watchQueue bounds the watch signals waiting to be sent.
const watchQueue = 256

// watchSignaller sends the watch signals of the Runner's subscribers
// (Config.SignalWatch), one at a time, from one goroutine of its own, so that no stream
// waits for them (see signalWatch).
type watchSignaller struct {
	signal func(ctx context.Context, owner, contextID string) error
	queue  chan watchSignal
	done   chan struct{} // closed when run has returned
	log    *slog.Logger
}

// startSignaller starts the sender of signal's calls, which runs until ctx is canceled
// (Close cancels the Runner's base). nil signal: nil, no signals are sent.
func startSignaller(ctx context.Context, signal func(ctx context.Context, owner, contextID string) error, log *slog.Logger) *watchSignaller {
	if signal == nil {
		return nil
	}
	w := &watchSignaller{signal: signal, queue: make(chan watchSignal, watchQueue), done: make(chan struct{}), log: log}
	go w.run(ctx) // exits when ctx is canceled
	return w
}

// run sends the queued watch signals until ctx is canceled. A failed signal is logged:
// it only delays the reply's text (see signalWatch).
func (w *watchSignaller) run(ctx context.Context) {
	defer close(w.done)
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-w.queue:
			sctx, cancel := context.WithTimeout(ctx, watchRefresh)
			err := w.signal(sctx, sig.owner, sig.contextID)
			cancel()
			if err != nil && ctx.Err() == nil {
				w.log.Warn("live stream: could not signal a watch to the other instances",
					"context_key", contextid.Key(sig.owner, sig.contextID), "err", err)
			}
		}
	}
}

// wait waits until run has returned; a nil signaller has nothing to wait for.
func (w *watchSignaller) wait() {
	if w != nil {
		<-w.done
	}
}
