package push

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/internal/tracing"
)

// Observer receives the deliverer's measurements (the gateway turns them into
// Prometheus metrics). Its methods are called from the deliverer's goroutines and must
// not block.
type Observer interface {
	// DeliveryDone reports one attempt: its outcome and how long the request took.
	DeliveryDone(outcome Outcome, latency time.Duration)
	// QueueDepth reports how many deliveries are pending (at most Options.Batch).
	QueueDepth(n int)
	// OldestUndelivered reports the age of the oldest pending delivery (0: none).
	OldestUndelivered(age time.Duration)
}

// Options configure a [Deliverer]. Outbox, Guard and Signer are required; every other
// zero value means its default.
type Options struct {
	Outbox Outbox
	Guard  *Guard
	Signer *Signer
	// RetryFor bounds how long a delivery is retried after its event (Created): a
	// failed attempt past it is OutcomeExpired. 0: 24h.
	RetryFor time.Duration
	// Timeout bounds one attempt, from the lookup to the end of the answer. 0: 10s.
	Timeout time.Duration
	// MaxBody is the most of an answer's body that is read. 0: 64 KiB.
	MaxBody int64
	// PerHost bounds the attempts in flight to one host. 0: 4.
	PerHost int
	// MinBackoff and MaxBackoff bound the wait before a retry: the n-th retry waits a
	// random time between MinBackoff and min(MaxBackoff, MinBackoff·2^(n-1)). 0: 1s, 5m.
	MinBackoff, MaxBackoff time.Duration
	// Logger gets the attempts that failed (Info), and final failures (Warn). nil: none.
	Logger *slog.Logger
	// Observer gets measurements. nil: none.
	Observer Observer
	// Now is the clock. nil: time.Now.
	Now func() time.Time
	// Poll is how often the outbox is read without a Notify. 0: 1s.
	Poll time.Duration
	// Batch is how many pending deliveries are read at once. 0: 256.
	Batch int
	// TLSConfig is the TLS client configuration (its ServerName is left to the URL's
	// host). nil: the system's roots.
	TLSConfig *tls.Config
	// TracerProvider makes a client span of every attempt (a root span; see
	// tracedAttempt), whose traceparent the webhook POST carries. nil: no spans.
	TracerProvider trace.TracerProvider
}

// recordTimeout bounds recording an attempt, which goes on after Run's ctx is done.
const recordTimeout = 5 * time.Second

// Deliverer sends the outbox's deliveries: each task's in Seq order, one at a time, at
// most PerHost at once to one host, each attempt claimed before and recorded after.
type Deliverer struct {
	opts    Options
	log     *slog.Logger
	obs     Observer
	tracer  trace.Tracer
	tr      *http.Transport
	client  *http.Client
	notify  chan struct{}
	running atomic.Bool
}

// NewDeliverer returns a deliverer with opts; it sends nothing before [Deliverer.Run].
// Errors: a required option is missing, or a bound is negative.
func NewDeliverer(opts Options) (*Deliverer, error) {
	if opts.Outbox == nil || opts.Guard == nil || opts.Signer == nil {
		return nil, errors.New("push: a Deliverer needs an Outbox, a Guard and a Signer")
	}
	if opts.RetryFor < 0 || opts.Timeout < 0 || opts.MaxBody < 0 || opts.PerHost < 0 || opts.MinBackoff < 0 || opts.MaxBackoff < 0 || opts.Poll < 0 || opts.Batch < 0 {
		return nil, errors.New("push: a Deliverer's bounds must not be negative")
	}
	opts = withDefaults(opts)
	dl := &Deliverer{opts: opts, log: opts.Logger, obs: opts.Observer, notify: make(chan struct{}, 1),
		tracer: tracing.Tracer(opts.TracerProvider)}
	dl.tr = newTransport(opts.Guard, opts.TLSConfig, opts.PerHost, opts.Timeout)
	dl.client = &http.Client{Transport: dl.tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a 3xx is a failed attempt: a redirect could lead anywhere
	}}
	return dl, nil
}

func withDefaults(o Options) Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.RetryFor, 24*time.Hour)
	def(&o.Timeout, 10*time.Second)
	def(&o.MinBackoff, time.Second)
	def(&o.MaxBackoff, 5*time.Minute)
	def(&o.Poll, time.Second)
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.MaxBody == 0 {
		o.MaxBody = 64 << 10
	}
	if o.PerHost == 0 {
		o.PerHost = 4
	}
	if o.Batch == 0 {
		o.Batch = 256
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

type nopObserver struct{}

func (nopObserver) DeliveryDone(Outcome, time.Duration) {}
func (nopObserver) QueueDepth(int)                      {}
func (nopObserver) OldestUndelivered(time.Duration)     {}

// Notify wakes Run to read the outbox now (after a commit that created deliveries). It
// never blocks; a wake-up missed is made up by the next poll.
func (dl *Deliverer) Notify() {
	select {
	case dl.notify <- struct{}{}:
	default:
	}
}

// result is what a worker reports when its attempt is over.
type result struct {
	task, host string
	hold       time.Time // do not start the task again before (claim lost, outbox error); zero: no hold
}

// sched is Run's state: the tasks and hosts with an attempt in flight, and held tasks.
type sched struct {
	inflight map[string]bool
	hosts    map[string]int
	hold     map[string]time.Time
}

func (s *sched) start(task, host string) {
	s.inflight[task] = true
	s.hosts[host]++
}

func (s *sched) finish(r result) {
	delete(s.inflight, r.task)
	if s.hosts[r.host]--; s.hosts[r.host] <= 0 {
		delete(s.hosts, r.host)
	}
	if !r.hold.IsZero() {
		s.hold[r.task] = r.hold
	}
}

// Run delivers until ctx is done, then waits for its attempts in flight to end (an
// attempt cut short is not recorded: it is made again after a restart) and returns nil.
// It reads the outbox at each Notify, every Poll, when a retry is due and when an
// attempt ends. Errors: Run was called before.
func (dl *Deliverer) Run(ctx context.Context) error {
	if !dl.running.CompareAndSwap(false, true) {
		return errors.New("push: Deliverer.Run called twice")
	}
	var wg sync.WaitGroup
	defer dl.tr.CloseIdleConnections()
	defer wg.Wait()
	done := make(chan result)
	poll := time.NewTicker(dl.opts.Poll)
	defer poll.Stop()
	wake := time.NewTimer(dl.opts.Poll)
	defer wake.Stop()
	s := &sched{inflight: map[string]bool{}, hosts: map[string]int{}, hold: map[string]time.Time{}}
	for {
		next := dl.dispatch(ctx, &wg, s, done)
		if next.IsZero() {
			wake.Stop()
		} else {
			wake.Reset(max(next.Sub(dl.opts.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-dl.notify:
		case <-poll.C:
		case <-wake.C:
		case r := <-done:
			s.finish(r)
		}
	}
}

// dispatch reads the outbox and starts an attempt for each task whose first pending
// delivery is due, whose host has room and that has none in flight. It returns when the
// next delivery not yet due is (zero: none).
func (dl *Deliverer) dispatch(ctx context.Context, wg *sync.WaitGroup, s *sched, done chan<- result) time.Time {
	pending, err := dl.opts.Outbox.Pending(ctx, dl.opts.Batch)
	if err != nil {
		if ctx.Err() == nil {
			dl.log.WarnContext(ctx, "push: reading the outbox failed; trying again at the next poll", "err", err)
		}
		return time.Time{}
	}
	now := dl.opts.Now()
	dl.observeQueue(pending, now)
	var next time.Time
	for _, d := range heads(pending) {
		at := d.NextAt
		if h, ok := s.hold[d.TaskID]; ok && !h.After(now) {
			delete(s.hold, d.TaskID)
		} else if ok && h.After(at) {
			at = h
		}
		if at.After(now) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		host := hostOf(d.URL)
		if s.inflight[d.TaskID] || s.hosts[host] >= dl.opts.PerHost {
			continue // started again when an attempt ends
		}
		s.start(d.TaskID, host)
		wg.Go(func() {
			r := result{task: d.TaskID, host: host, hold: dl.deliver(ctx, d)}
			select {
			case done <- r:
			case <-ctx.Done():
			}
		})
	}
	return next
}

// heads returns each task's first pending delivery (lowest Seq), in the order the
// tasks first appear.
func heads(pending []Delivery) []Delivery {
	idx := map[string]int{}
	var out []Delivery
	for _, d := range pending {
		i, ok := idx[d.TaskID]
		switch {
		case !ok:
			idx[d.TaskID] = len(out)
			out = append(out, d)
		case d.Seq < out[i].Seq:
			out[i] = d
		}
	}
	return out
}

func (dl *Deliverer) observeQueue(pending []Delivery, now time.Time) {
	dl.obs.QueueDepth(len(pending))
	var oldest time.Time
	for _, d := range pending {
		if oldest.IsZero() || d.Created.Before(oldest) {
			oldest = d.Created
		}
	}
	if oldest.IsZero() {
		dl.obs.OldestUndelivered(0)
		return
	}
	dl.obs.OldestUndelivered(max(now.Sub(oldest), 0))
}

// hostOf is the host the per-host bound counts d's URL under.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return canonicalHost(u.Hostname())
}

// deliver claims d, makes one attempt and records it. It returns a time before which
// d's task is not to be tried again (the claim went to another instance, or the
// outbox failed), zero when the recorded attempt decides.
func (dl *Deliverer) deliver(ctx context.Context, d Delivery) time.Time {
	log := dl.log.With("task_id", d.TaskID, "event_id", d.ID, "host", hostOf(d.URL))
	ok, err := dl.opts.Outbox.Claim(ctx, d)
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "push: claiming a delivery failed", "err", err)
		}
		return dl.opts.Now().Add(dl.opts.Poll)
	}
	a := dl.tracedAttempt(ctx, d)
	if a.Outcome == OutcomeRetry {
		if ctx.Err() != nil {
			return time.Time{} // cut short by the stop: not recorded, made again after a restart
		}
		dl.schedule(d, &a)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := dl.opts.Outbox.Record(rctx, d, a); err != nil {
		// Not recorded: the delivery stays pending and is tried again (perhaps sent
		// twice, which receivers de-duplicate), later than a poll so that a store that
		// cannot write is not met with a request a second.
		log.WarnContext(ctx, "push: recording an attempt failed; the delivery stays pending", "err", err, "outcome", string(a.Outcome))
		return dl.opts.Now().Add(max(dl.opts.Poll, dl.opts.MaxBackoff/10))
	}
	dl.obs.DeliveryDone(a.Outcome, a.Latency)
	logAttempt(ctx, log, d, a)
	return time.Time{}
}

// schedule turns a failed attempt into a retry at the backoff (never past the retry
// window's end, so the last try is at the end), or, once the window has ended, into
// OutcomeExpired.
func (dl *Deliverer) schedule(d Delivery, a *Attempt) {
	now := dl.opts.Now()
	end := d.Created.Add(dl.opts.RetryFor)
	if !now.Before(end) {
		a.Outcome = OutcomeExpired
		a.Error = fmt.Sprintf("%s; given up: the retry window (%v after the event) has ended", a.Error, dl.opts.RetryFor)
		return
	}
	a.NextAt = now.Add(backoff(dl.opts.MinBackoff, dl.opts.MaxBackoff, d.Attempts+1))
	if a.NextAt.After(end) {
		a.NextAt = end
	}
}

func logAttempt(ctx context.Context, log *slog.Logger, d Delivery, a Attempt) {
	attrs := []any{"outcome", string(a.Outcome), "status", a.Status, "latency", a.Latency, "attempt", d.Attempts + 1}
	switch a.Outcome {
	case OutcomeDelivered:
		log.DebugContext(ctx, "push: delivered", attrs...)
	case OutcomeRetry:
		log.InfoContext(ctx, "push: attempt failed; retrying", append(attrs, "err", a.Error, "next_at", a.NextAt)...)
	default:
		log.WarnContext(ctx, "push: delivery abandoned", append(attrs, "err", a.Error)...)
	}
}
