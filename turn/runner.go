package turn

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/feed"
	"github.com/a2a-gateway/gateway/internal/genmap"
	"github.com/a2a-gateway/gateway/projection"
)

// Config configures a Runner. The zero value is usable.
type Config struct {
	// FinalizeTimeout bounds the appends and lease release that end a turn, which run
	// without the turn's cancellation. 0: 10s.
	FinalizeTimeout time.Duration
	// BusyWait is how long a send to a busy context waits for the running task to end
	// before it is refused with CONTEXT_BUSY. 0: refuse at once (the "reject" policy),
	// except while the running turn stores its end and gives the lease up: that short
	// handover is waited for in either policy (see awaitEnding).
	BusyWait time.Duration
	// Policy is the projection policy (history limit, budgets, operator policy); the
	// peer is filled in per turn. Its zero value gives the agent no history.
	Policy projection.Policy

	// Limits; 0 means no limit of that kind. A breach is -32602 invalid params
	// naming the limit, and nothing is stored.
	MaxParts        int // parts per message
	MaxPartBytes    int // bytes of one part's content (text, data or file bytes)
	MaxMessageBytes int // bytes of all the message's parts together
	// MaxStreamsPerPeer bounds the streams (SSE and WebSocket subscriptions) one peer has
	// open at once; beyond it a stream is refused with RATE_LIMITED. (The peers' request
	// rate is limited before a request reaches the Runner: cmd/gateway's ratelimit.go.)
	MaxStreamsPerPeer int

	// Observe receives measurements; nil observes nothing.
	Observe Observer
	// Tools gives each turn the tools its agent may call; nil offers none.
	Tools ToolBox
	// MaxToolCalls and ToolTime bound a turn's tool calls (agent.Turn's fields; 0: the
	// agent's defaults).
	MaxToolCalls int
	ToolTime     time.Duration

	// SharedStore: the ledger is shared with other instances (ledger/postgres), which
	// announce what they commit through [Runner.Announce]. A task stream then follows a
	// task running on another instance, and a live stream that sees a gap in seq catches
	// up from the store first. A turn stores its reply's chunks while a reader here or on
	// another instance watches the context (see SignalWatch).
	SharedStore bool
	// SignalWatch (SharedStore only; nil: none) tells every instance that a subscriber
	// here (conversations/subscribe, tasks/resubscribe) follows the conversation (owner,
	// contextID): each instance passes it to [Runner.WatchedElsewhere]. A subscriber has
	// it called (by one goroutine of the Runner's, so that no stream waits for it) when it
	// starts and every watchRefresh while it reads. A signal lost or late only
	// delays the reply's text: a turn that stored no chunk stores the whole reply at its end.
	SignalWatch func(ctx context.Context, owner, contextID string) error
	// LeaseTTL is the Locker's lease lifetime. With SharedStore and a positive LeaseTTL
	// the Runner sweeps every LeaseTTL for tasks that an instance left running when it
	// stopped (their lease has expired) and marks them failed (see Recover): such a task
	// is recovered within about twice LeaseTTL of the stop. A context kept busy by new
	// turns is not swept (its lease is held): there the first turn that takes the lease
	// marks the task failed as it begins (planBegin), within about LeaseTTL. 0: no sweep.
	LeaseTTL time.Duration

	// PushGuard enables push notifications (issue #20) and checks every webhook URL a
	// peer sets. nil: push is not supported (the push methods and a send with a push
	// config answer PUSH_NOTIFICATION_NOT_SUPPORTED, -32003). See push.go and outbox.go.
	PushGuard PushGuard
	// PushNotify, if set, is called after each commit that created outbox entries (the
	// deliverer's wake-up). It must not block.
	PushNotify func()
	// MaxPushConfigsPerTask and MaxPushConfigsPerPeer bound the live push configs of a
	// task and of a peer; beyond them a new config is refused with invalid params and
	// nothing is stored. 0: 10 and 1000.
	MaxPushConfigsPerTask int
	MaxPushConfigsPerPeer int
}

// Runner runs turns and serves the A2A methods over the ledger.
type Runner struct {
	cfg   Config
	led   Ledger
	locks Locker
	agent agent.Agent
	log   *slog.Logger

	base    context.Context // parent of every turn; canceled by Close after its deadline
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closing atomic.Bool

	mu   sync.Mutex
	live map[string]*liveTask // running tasks by id
	// handovers holds, by context key, the turns that gave their lease up on ending
	// (turnRun.handOver) and have not yet published their end and left: the next turn of
	// that context waits for the channel to close (awaitHandover).
	handovers map[string]chan struct{}

	feeds feed.Feeds // live events by context

	// Rejected requests are audited off the request path, so a busy reply never waits
	// for an fsync. The queue is bounded (a flood of busy sends drops audits, counted);
	// one goroutine, owned by the Runner, writes them.
	audits        chan auditItem
	auditsDone    chan struct{}
	auditsDropped atomic.Uint64
	lastDropWarn  time.Time // guarded by mu

	obs      Observer
	prefixes prefixTracker
	seen     latestSeen // the latest messageId stored per conversation (retry.go)

	sweepDone chan struct{} // closed when the recovery sweep has returned; already closed without one

	outbox *outbox // the push outbox; nil when push is disabled (outbox.go)

	// Watch signals of subscribers (Config.SignalWatch), sent by one goroutine owned by
	// the Runner (sendWatchSignals) so that no stream waits for them; signalsDone is
	// closed when it has returned (already closed without one).
	watchSignals chan watchSignal
	signalsDone  chan struct{}

	streamsMu sync.Mutex     // guards streams only; never held with mu
	streams   map[string]int // open streams per peer
}

var _ a2a.Handler = (*Runner)(nil)

// New returns a Runner. Close it to stop its turns.
func New(cfg Config, led Ledger, locks Locker, ag agent.Agent, logger *slog.Logger) *Runner {
	if cfg.FinalizeTimeout <= 0 {
		cfg.FinalizeTimeout = 10 * time.Second
	}
	base, cancel := context.WithCancel(context.Background())
	r := &Runner{
		cfg: cfg, led: led, locks: locks, agent: ag,
		log:  logger.With("component", "turn"),
		base: base, cancel: cancel,
		live:       map[string]*liveTask{},
		seen:       latestSeen{genmap.Map[seenMessage]{Max: latestSeenMax}},
		handovers:  map[string]chan struct{}{},
		audits:     make(chan auditItem, auditQueue),
		auditsDone: make(chan struct{}),
		obs:        cfg.Observe,
		streams:    map[string]int{},
	}
	if r.obs == nil {
		r.obs = noObserver{}
	}
	if cfg.PushGuard != nil {
		r.led = &outboxLedger{Ledger: led, r: r} // outbox.go
		r.outbox = newOutbox(r)
	}
	go r.writeAudits(r.audits) // exits when Close closes the queue and it is drained
	r.sweepDone = make(chan struct{})
	r.signalsDone = make(chan struct{})
	if cfg.SharedStore && cfg.SignalWatch != nil {
		r.watchSignals = make(chan watchSignal, watchQueue)
		go r.sendWatchSignals() // exits when Close cancels r.base
	} else {
		close(r.signalsDone)
	}
	if cfg.SharedStore && cfg.LeaseTTL > 0 {
		go r.sweepRecover(cfg.LeaseTTL) // exits when Close cancels r.base
	} else {
		close(r.sweepDone)
	}
	return r
}

// Close stops accepting turns, waits for the running ones until ctx is done, then cancels
// them and waits for them to record their end. It returns ctx.Err() if the deadline hit.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closing.Store(true) // under mu: every turn enter admitted is in r.wg now
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }() // exits when every turn has ended
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		r.cancel()
		<-done
	}
	r.cancel()
	<-r.sweepDone
	<-r.signalsDone
	r.mu.Lock()
	if r.audits != nil {
		close(r.audits)
		r.audits = nil
	}
	r.mu.Unlock()
	<-r.auditsDone
	return err
}

// Running returns the number of turns in progress.
func (r *Runner) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.live)
}
