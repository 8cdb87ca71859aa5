package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/turn"
)

// metricsPath serves the Prometheus text exposition (O-1).
const metricsPath = "/metrics"

var _ turn.Observer = (*metrics)(nil)

// Histogram buckets, in seconds unless named otherwise.
var (
	// Requests and turns: a unary send waits for the agent; streams last a whole reply.
	slowBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	// The lease: a local mutex (microseconds) up to a Redis round trip or a busy wait.
	leaseBuckets = []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// A bbolt write transaction with its fsync.
	commitBuckets = []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5}
	// Entries per group commit: 1 to the committer's batch bound (1000 requests).
	appendsBuckets = prometheus.ExponentialBuckets(1, 2, 12) // 1 … 2048
	// The request given to the agent: 256 B … 16 MiB.
	bytesBuckets = prometheus.ExponentialBuckets(256, 4, 9)
	// The share of the previous request a new one repeats as its prefix (0 … 1).
	ratioBuckets = []float64{0, .1, .25, .5, .75, .9, .95, .99, 1}
	// A CONTEXT_BUSY refusal: no agent, no disk; 100 µs to a second (perf anchor G7: p99 ≤ 5 ms).
	busyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}
)

// metrics holds the gateway's collectors on a private registry (never the global
// default one, so tests and embedders get a clean set per server). It implements
// turn.Observer; every method is a few atomic operations and never blocks.
type metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec   // method, dialect, code
	requestSeconds  *prometheus.HistogramVec // method
	turns           *prometheus.CounterVec   // state
	turnSeconds     prometheus.Histogram
	turnExemplars   *exemplarGate // which turns' trace ids turnSeconds keeps (exemplar.go)
	busy            prometheus.Counter
	retried         prometheus.Counter
	busySeconds     prometheus.Histogram
	rateLimited     *prometheus.CounterVec // peer
	limitRejections *prometheus.CounterVec // limit
	leaseSeconds    *prometheus.HistogramVec
	commitSeconds   prometheus.Histogram
	appendsPer      prometheus.Histogram
	agentSeconds    prometheus.Histogram
	agentErrors     prometheus.Counter
	agentRetries    *prometheus.CounterVec // reason
	projBytes       prometheus.Histogram
	prefixStability prometheus.Histogram
	authFailures    *prometheus.CounterVec // reason
	tools           *toolMetrics
	push            *pushMetrics
	prompt          *promptMetrics // prompt_metrics.go
}

// newMetrics registers every collector. streams reports the open streams and WebSocket
// connections when scraped (nil: 0, 0).
func newMetrics(streams func() (streams, wsConns int)) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.newRequestMetrics()
	m.newBackendMetrics()
	for _, c := range []prometheus.Collector{
		m.requests, m.requestSeconds, m.turns, m.turnSeconds, m.busy, m.busySeconds, m.retried, m.rateLimited, m.limitRejections,
		m.leaseSeconds, m.commitSeconds, m.appendsPer, m.agentSeconds, m.agentErrors, m.agentRetries, m.projBytes,
		m.prefixStability, m.authFailures,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gateway_active_streams", Help: "Open A2A streams (SSE and WebSocket subscriptions).",
		}, readStreams(streams, 0)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gateway_websocket_connections", Help: "Open WebSocket connections.",
		}, readStreams(streams, 1)),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		m.reg.MustRegister(c)
	}
	m.tools = newToolMetrics(m.reg)
	m.push = newPushMetrics(m.reg)
	m.prompt = newPromptMetrics(m.reg)
	// Label values that are known up front start at 0, so rate() sees the first event.
	for _, o := range []string{"ok", "held", "error"} {
		m.leaseSeconds.WithLabelValues(o)
	}
	for _, r := range []string{"missing", "invalid", "throttled"} {
		m.authFailures.WithLabelValues(r)
	}
	for _, l := range []string{"parts", "part_bytes", "message_bytes", "streams", "ws_conns"} {
		m.limitRejections.WithLabelValues(l)
	}
	return m
}

// readStreams returns a gauge function reading streams() (which: 0 the streams, 1 the
// WebSocket connections); a nil streams reads 0.
func readStreams(streams func() (streams, wsConns int), which int) func() float64 {
	return func() float64 {
		if streams == nil {
			return 0
		}
		s, ws := streams()
		if which == 0 {
			return float64(s)
		}
		return float64(ws)
	}
}

// newRequestMetrics creates the collectors of requests and turns as the peers see them:
// answers, turns, refusals.
func (m *metrics) newRequestMetrics() {
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_requests_total",
		Help: "Answered JSON-RPC requests by method (\"unknown\" for a name that is not an A2A method, \"invalid\" when undecodable), dialect (0.3 or 1.0) and JSON-RPC code (0 = success).",
	}, []string{"method", "dialect", "code"})
	m.requestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gateway_request_duration_seconds", Help: "Time to answer a JSON-RPC request; streams count until they end.", Buckets: slowBuckets,
	}, []string{"method"})
	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_turns_total", Help: "Turns ended, by final task state.",
	}, []string{"state"})
	m.turnSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "gateway_turn_duration_seconds", Help: "Time from a send's arrival to the end of its turn.", Buckets: slowBuckets,
	})
	m.turnExemplars = newExemplarGate(slowBuckets, exemplarEvery)
	m.busy = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gateway_busy_rejections_total", Help: "Requests refused with CONTEXT_BUSY (a task of the context was running): sends, and cancels of a parked task.",
	})
	m.retried = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gateway_send_retries_total", Help: "Sends answered as a retry of a stored message (the same messageId and parts as the context's latest one): no turn ran, nothing was stored.",
	})
	m.busySeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gateway_busy_reply_seconds",
		Help:    "Time to answer a request refused with CONTEXT_BUSY (a task of its context was running), measured as gateway_request_duration_seconds is.",
		Buckets: busyBuckets,
	})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_rate_limited_total", Help: "Requests refused with RATE_LIMITED, by peer.",
	}, []string{"peer"})
	m.limitRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_limit_rejections_total", Help: "Requests refused for a size or count limit, by limit (parts, part_bytes, message_bytes, streams, ws_conns).",
	}, []string{"limit"})
	m.authFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_auth_failures_total", Help: "A2A requests refused for authentication, by reason: missing or invalid bearer token (401), throttled (429: the source sent too many invalid tokens).",
	}, []string{"reason"})
}

// newBackendMetrics creates the collectors of what a turn uses: the lease, the ledger,
// the agent and the projection.
func (m *metrics) newBackendMetrics() {
	m.leaseSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gateway_lease_acquire_seconds", Help: "Time to take a context's lease, by outcome (ok, held, error).", Buckets: leaseBuckets,
	}, []string{"outcome"})
	m.commitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "gateway_ledger_commit_seconds", Help: "Ledger write transactions (fsync included) that committed appends.", Buckets: commitBuckets,
	})
	m.appendsPer = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "gateway_ledger_appends_per_commit", Help: "Ledger entries committed per write transaction (group commit).", Buckets: appendsBuckets,
	})
	m.agentSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "gateway_agent_request_seconds", Help: "Time the agent backend took for one reply.", Buckets: slowBuckets,
	})
	m.agentErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gateway_agent_errors_total", Help: "Agent replies that ended in an error.",
	})
	m.agentRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_agent_retries_total", Help: "Requests the openai or anthropic agent sent again after a passing refusal, by reason: the upstream's HTTP status (429, 503, ...) or connection.",
	}, []string{"reason"})
	m.projBytes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "gateway_projection_bytes", Help: "Size of the request given to the agent, in bytes.", Buckets: bytesBuckets,
	})
	m.prefixStability = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gateway_projection_prefix_stability",
		Help:    "Share of the previous turn's agent request (same context) that the next one repeats as its prefix: 1 = the old request is a prefix of the new one (prompt-cache friendly).",
		Buckets: ratioBuckets,
	})
}

// observeRequest is a2a.TransportConfig.Observe. Method names come from the client, so
// only the A2A methods become label values (bounded cardinality).
func (m *metrics) observeRequest(method string, d a2a.Dialect, code int, reason string, dur time.Duration) {
	switch {
	case method == "":
		method = "invalid"
	default:
		if _, ok := a2a.MethodDialect(method); !ok {
			method = "unknown"
		}
	}
	m.requests.WithLabelValues(method, d.String(), strconv.Itoa(code)).Inc()
	m.requestSeconds.WithLabelValues(method).Observe(dur.Seconds())
	if reason == busyReason {
		m.busySeconds.Observe(dur.Seconds())
	}
}

// busyReason is the error reason of a send refused because its context is busy (-32004
// is also UNSUPPORTED_OPERATION's code: the reason tells them apart).
var busyReason = a2a.ToRPCError(a2a.ErrContextBusy).Reason

// observeCommit is ledger.Options.OnCommit.
func (m *metrics) observeCommit(d time.Duration, appends int) {
	m.commitSeconds.Observe(d.Seconds())
	m.appendsPer.Observe(float64(appends))
}

// authFailure counts a refused A2A request; reason is "missing" or "invalid".
func (m *metrics) authFailure(reason string) { m.authFailures.WithLabelValues(reason).Inc() }

// TurnDone implements turn.Observer. A turn in a sampled trace leaves its trace id as
// the exemplar of the duration's bucket (served in the OpenMetrics format), so a slow
// bucket leads to a trace: at most one per bucket per second (exemplarGate).
func (m *metrics) TurnDone(ctx context.Context, state string, d time.Duration) {
	m.turns.WithLabelValues(state).Inc()
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() && m.turnExemplars.allow(d.Seconds()) {
		if eo, ok := m.turnSeconds.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	m.turnSeconds.Observe(d.Seconds())
}

// Busy implements turn.Observer. The refused request's answer is timed by observeRequest.
func (m *metrics) Busy() { m.busy.Inc() }

// Retried implements turn.Observer.
func (m *metrics) Retried() { m.retried.Inc() }

// RateLimited implements rateObserver (the rate limit, ratelimit.go). Peers are
// configured identities (or "local"), so the label is bounded by the config.
func (m *metrics) RateLimited(peer string) { m.rateLimited.WithLabelValues(peer).Inc() }

// LimitExceeded implements turn.Observer.
func (m *metrics) LimitExceeded(what string) { m.limitRejections.WithLabelValues(what).Inc() }

// LeaseAcquire implements turn.Observer.
func (m *metrics) LeaseAcquire(d time.Duration, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, locking.ErrHeld):
		outcome = "held"
	default:
		outcome = "error"
	}
	m.leaseSeconds.WithLabelValues(outcome).Observe(d.Seconds())
}

// AgentDone implements turn.Observer.
func (m *metrics) AgentDone(d time.Duration, err error) {
	m.agentSeconds.Observe(d.Seconds())
	if err != nil {
		m.agentErrors.Inc()
	}
}

// AgentRetry counts a request the agent backend sends again (agent.OpenAIConfig.OnRetry).
func (m *metrics) AgentRetry(reason string) { m.agentRetries.WithLabelValues(reason).Inc() }

// Projection implements turn.Observer. The prefix stability is observed only when there
// was a previous request in the context.
func (m *metrics) Projection(bytes, prevBytes, stablePrefix int) {
	m.projBytes.Observe(float64(bytes))
	if prevBytes > 0 {
		m.prefixStability.Observe(min(1, float64(stablePrefix)/float64(prevBytes)))
	}
	m.prompt.observeReuse(prevBytes, stablePrefix)
}

// handler serves the registry in the Prometheus text format, or in OpenMetrics (with the
// exemplars) when the scraper asks for it (Accept: application/openmetrics-text), behind
// the admin rule: with
// an admin token it is required ("Authorization: Bearer <token>"); without one only
// loopback clients are served.
func (m *metrics) handler(gate adminGate, log *slog.Logger) http.Handler {
	log = log.With("component", "metrics")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A handler per scrape (one every few seconds at most), so that promhttp's error
		// log, which gets no context, can log with the scrape's (its request id).
		promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
			ErrorLog: promErrorLog(func(v ...any) {
				log.ErrorContext(r.Context(), "serving metrics failed", "err", strings.TrimSpace(fmt.Sprintln(v...)))
			}),
			Registry:          m.reg, // promhttp_metric_handler_errors_total
			EnableOpenMetrics: true,  // only when asked for: the exemplars (TurnDone)
		}).ServeHTTP(w, r)
	})
	return adminOnly(gate, metricsPath, h)
}

// promErrorLog routes promhttp's error log to slog.
type promErrorLog func(v ...any)

// Println implements promhttp.Logger.
func (p promErrorLog) Println(v ...any) { p(v...) }
