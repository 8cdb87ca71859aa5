package turn

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/feed"
	"github.com/a2a-gateway/gateway/internal/genmap"
	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/a2a-gateway/gateway/prompt"
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
	// MemoryTimeout bounds a chat backend's memory summary (Policy.Memory; memory.go).
	// 0: 20s.
	MemoryTimeout time.Duration
	// HistoryCache bounds the cache of each conversation's history window kept between
	// its turns (prompt.Cache: a turn reads only the entries appended since its
	// conversation's previous turn): at most HistoryCache conversations (0:
	// prompt.DefaultCacheConversations; negative: no cache, every turn reads its history
	// from the ledger) holding about HistoryCacheBytes (0: prompt.DefaultCacheBytes).
	HistoryCache      int
	HistoryCacheBytes int64

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

	// TracerProvider makes the turn's spans (trace.go: a2a.turn and its children) and
	// its tools' (execute_tool). nil: no spans of the gateway's own, but a caller's
	// traceparent still passes through, and every entry a traced turn writes carries the
	// trace and span ids of its context (ledger.Entry.TraceID, SpanID).
	TracerProvider trace.TracerProvider
}

// Runner runs turns and serves the A2A methods over the ledger. Its jobs live in files
// of their own: admission (send.go, admit.go, lease.go, audit.go), a running turn
// (execute.go, chunks.go), reading tasks and streams (tasks.go, subscribe.go, events.go),
// recovery (recover.go), push (push.go, outbox.go).
type Runner struct {
	cfg Config
	// The ledger, as the Runner's own methods use it (deps.go); with push, its appends
	// carry their outbox entries (outboxLedger). Its small types hold their own view.
	store  turnStore
	tasks  taskReader
	agent  agent.Agent
	log    *slog.Logger
	obs    Observer
	tracer trace.Tracer // from Config.TracerProvider (trace.go)

	base    context.Context // parent of every turn; canceled by Close after its deadline
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the running turns (enter, launch)
	closing atomic.Bool

	mu   sync.Mutex
	live map[string]*liveTask // running tasks by id

	feeds    feed.Feeds      // live events by context
	leases   *leases         // the context leases, and the turns handing theirs over (lease.go)
	audits   *auditLog       // the audit of refused requests, written off the request path (audit.go)
	streams  openStreams     // the streams each peer has open (limits.go)
	prefixes prefixTracker   // the prompt's stable prefix, measured (limits.go)
	history  *prompt.Cache   // the conversations' history windows; nil: none (Config.HistoryCache)
	seen     latestSeen      // the latest messageId stored per conversation (retry.go)
	recovery *recovery       // marks the tasks of stopped turns failed (recover.go)
	push     *pushConfigs    // peers' push configs; nil when push is disabled (push.go)
	outbox   *outbox         // the push outbox; nil when push is disabled (outbox.go)
	signals  *watchSignaller // subscribers' watch signals (shared.go); nil without Config.SignalWatch

	sweepDone chan struct{} // closed when the recovery sweep has returned; already closed without one
}

var _ a2a.Handler = (*Runner)(nil)

// New returns a Runner. Close it to stop its turns. It starts the Runner's own
// goroutines: the audit writer, and over a shared store the watch signaller
// (Config.SignalWatch) and the recovery sweep (Config.LeaseTTL); Close ends them.
func New(cfg Config, led Ledger, locks Locker, ag agent.Agent, logger *slog.Logger) *Runner {
	if cfg.FinalizeTimeout <= 0 {
		cfg.FinalizeTimeout = 10 * time.Second
	}
	base, cancel := context.WithCancel(context.Background())
	r := &Runner{
		cfg: cfg, agent: ag, obs: cfg.Observe,
		log:  logger.With("component", "turn"),
		base: base, cancel: cancel,
		live: map[string]*liveTask{},
		seen: latestSeen{genmap.Map[seenMessage]{Max: latestSeenMax}},
	}
	if r.obs == nil {
		r.obs = noObserver{}
	}
	if cfg.HistoryCache >= 0 {
		r.history = prompt.NewCache(cfg.HistoryCache, cfg.HistoryCacheBytes)
	}
	r.tracer = tracing.Tracer(cfg.TracerProvider)
	led = &tracedLedger{Ledger: led, tracer: r.tracer} // trace.go: inside the outbox, so its entries carry the ids too
	r.streams = openStreams{max: cfg.MaxStreamsPerPeer, obs: r.obs}
	r.leases = newLeases(&cfg, locks, r.obs, r.log)
	if cfg.PushGuard != nil {
		r.push = newPushConfigs(&cfg, led)
		r.outbox = newOutbox(r.push, r.leases, cfg.SharedStore, r.log)
		led = &outboxLedger{Ledger: led, o: r.outbox, notify: cfg.PushNotify} // outbox.go
		r.outbox.store = led
	}
	r.store, r.tasks = led, led
	r.audits = newAuditLog(led, cfg.FinalizeTimeout, r.log)
	r.recovery = &recovery{store: led, locks: locks, shared: cfg.SharedStore, log: r.log}
	r.startShared()
	return r
}

// startShared starts, over a shared store, the watch signaller (Config.SignalWatch) and
// the recovery sweep (Config.LeaseTTL); both run until Close cancels r.base.
func (r *Runner) startShared() {
	r.sweepDone = make(chan struct{})
	if !r.cfg.SharedStore {
		close(r.sweepDone)
		return
	}
	r.signals = startSignaller(r.base, r.cfg.SignalWatch, r.log)
	if r.cfg.LeaseTTL > 0 {
		go r.recovery.sweep(r.base, r.cfg.LeaseTTL, r.sweepDone) // exits when Close cancels r.base
	} else {
		close(r.sweepDone)
	}
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
	r.signals.wait()
	r.audits.close()
	return err
}

// Running returns the number of turns in progress.
func (r *Runner) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.live)
}
