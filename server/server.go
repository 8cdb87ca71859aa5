package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/console"
	"github.com/a2a-gateway/gateway/grpcapi"
	"github.com/a2a-gateway/gateway/internal/httpguard"
	"github.com/a2a-gateway/gateway/internal/logctx"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/a2a-gateway/gateway/push"
	"github.com/a2a-gateway/gateway/streaming"
	"github.com/a2a-gateway/gateway/tools"
	"github.com/a2a-gateway/gateway/turn"
)

// Interface guards: the wiring is the one place that sees both sides.
var (
	_ turn.Ledger = (*ledger.Store)(nil)
	_ locker      = (*locking.Local)(nil)
	_ locker      = (*locking.Redis)(nil)
)

// locker is what the server needs of a lease service: what a turn needs, plus readiness,
// the running task for operators, and Close.
type locker interface {
	turn.Locker
	Holder(ctx context.Context, key string) (string, error)
	Ping(ctx context.Context) error
	Close() error
}

// Server is a running gateway: opened resources plus the HTTP server. Tests use it to run
// the real thing in-process.
type Server struct {
	cfg    Config
	log    *slog.Logger
	ledger Ledger
	locks  locker
	agent  agent.Agent
	policy projection.Policy
	// localToken is the admin token for writes when none is configured, written to the
	// data dir's admin.token (see adminGate); "" with --admin-token.
	localToken string
	runner     *turn.Runner
	toolbox    *tools.Box // the agent's tools; nil when off
	http       *http.Server
	ln         net.Listener
	ready      atomic.Bool
	served     chan error
	closed     atomic.Bool
	// closers close what Open opened, in reverse; runnerClosed makes the runner's
	// Close run once.
	closers      closers
	runnerClosed atomic.Bool

	// tokens authenticates peers on the A2A routes (see peerAuth); empty: everyone is
	// "local".
	tokens *peerTokens
	// authFails throttles sources that present invalid tokens (see authlimit.go).
	authFails *authLimiter
	// metrics is the Prometheus registry and the turn.Observer (see metrics.go).
	metrics *metrics
	// streamStats reports the open A2A streams and WebSocket connections for the
	// gateway_active_streams and gateway_websocket_connections gauges; nil reports 0, 0.
	// Open sets it to the runner's stream count (SSE and WebSocket subscriptions)
	// and 0 connections; replace it there, before the listener starts, to report
	// WebSocket connections. It is called on every scrape, so it must be cheap and safe
	// for concurrent use.
	streamStats func() (streams, wsConns int)
	ws          *streaming.Handler
	wsTune      func(*streaming.Config) // withStreaming's adjustment, applied by listen; nil: none
	hosts       *httpguard.Hosts        // the Host names every route answers to (see guard)
	// console is the operator console, set by routes before the listener serves; its
	// sessions admit the operator on GET /ws (see wsAuth). nil: it could not be built.
	console *console.Handler
	// push is push-notification delivery (push_wiring.go); nil: off.
	push *pushService

	// grpc is the gRPC binding on grpcLn (grpc.go); nil: off (Config.GRPCAddr empty).
	// grpcServed receives its Serve's return.
	grpc       *grpcapi.Server
	grpcLn     net.Listener
	grpcServed chan error

	// handler is what the A2A transports serve: the runner behind the rate limit
	// (ratelimit.go).
	handler peerHandler
}

// Option adjusts a Server before it starts (tests swap the agent or tune the
// WebSocket handler).
type Option func(*serverDeps)

type serverDeps struct {
	agent     agent.Agent
	streaming func(*streaming.Config) // adjusts the WebSocket config before NewHandler; nil: none
	ledger    func(*ledger.Options)   // adjusts the ledger's options before Open; nil: none
}

// WithAgent makes the server use a instead of the configured backend.
func WithAgent(a agent.Agent) Option { return func(d *serverDeps) { d.agent = a } }

// withStreaming lets f adjust the WebSocket handler's config (send buffer, slow-consumer
// wait, timeouts) before the handler is built.
func withStreaming(f func(*streaming.Config)) Option {
	return func(d *serverDeps) { d.streaming = f }
}

// Open validates cfg, binds cfg.Addr (first, so that a start that cannot listen
// creates no data dir and no ledger), opens the ledger and the lease service, builds the
// agent and the turn runner, marks turns interrupted by the last stop as failed, and
// starts serving. On error nothing it opened is left open or running: every
// resource is registered as it is opened and closed again, in the order [Server.Close]
// uses, before Open returns. Errors: cfg's validation error; the listener; the data
// dir or the ledger (wrapping the ledger's error); the lease service; the agent backend;
// recovery (wrapping ctx.Err() when ctx is done).
func Open(ctx context.Context, cfg Config, logger *slog.Logger, opts ...Option) (_ *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rate, err := parseRate(cfg.RateLimit)
	if err != nil {
		return nil, err // Validate reported it already; kept for a direct caller
	}
	policy := cfg.policy()
	if err := policy.Validate(); err != nil {
		return nil, fmt.Errorf("projection policy: %w", err)
	}
	deps := serverDeps{}
	for _, o := range opts {
		o(&deps)
	}
	s := newServer(cfg, logctx.NewLogger(logger), policy)
	defer func() {
		if err == nil {
			return
		}
		if cerr := s.closeAfterFailedStart(ctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if err := s.bind(); err != nil {
		return nil, err
	}
	if err := s.openStorage(ctx, deps); err != nil {
		return nil, err
	}
	if err := s.openAgent(deps); err != nil {
		return nil, err
	}
	if s.push, err = newPushService(ctx, s.cfg, s.log); err != nil {
		return nil, err
	}
	s.startRunner(rate, deps)
	s.followStore()
	if n, err := s.runner.Recover(ctx); err != nil {
		return nil, err
	} else if n > 0 {
		s.log.WarnContext(ctx, "marked turns interrupted by the last stop as failed", "tasks", n)
	}
	if err := s.startPush(s.pushOutbox()); err != nil {
		return nil, err
	}
	if err := s.listen(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// newServer returns a Server with nothing opened yet.
func newServer(cfg Config, logger *slog.Logger, policy projection.Policy) *Server {
	s := &Server{cfg: cfg, log: logger, policy: policy, served: make(chan error, 1), grpcServed: make(chan error, 1), tokens: newPeerTokens(cfg.Peers),
		authFails: newAuthLimiter(authFailMax, authFailWindow, authFailSources)}
	s.metrics = newMetrics(func() (int, int) {
		if s.streamStats == nil {
			return 0, 0
		}
		return s.streamStats()
	})
	return s
}

// openStorage opens the ledger and the lease service (Redis when configured, else
// in-process) and registers them for closing.
func (s *Server) openStorage(ctx context.Context, deps serverDeps) error {
	if err := os.MkdirAll(s.cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	lopts := ledger.Options{OnCommit: s.metrics.observeCommit, SalvageDamaged: true,
		OnVerify: ledger.LogProgress(s.log, "verifying every conversation")} // an admin-API verification that takes a while
	if deps.ledger != nil {
		deps.ledger(&lopts)
	}
	led, err := OpenLedger(ctx, s.cfg.Store, s.cfg.DataDir, lopts, s.log)
	if err != nil {
		return err
	}
	s.ledger = led
	s.closers.add(func(context.Context) error {
		if err := led.Close(); err != nil {
			return fmt.Errorf("close ledger: %w", err)
		}
		return nil
	})
	// The data dir is ours now (the ledger is open): its admin token file is too.
	if s.localToken, err = setupLocalAdminToken(s.cfg.DataDir, s.cfg.AdminToken); err != nil {
		return err
	}
	if rc, ok := s.cfg.RedisConfig(); !ok {
		s.locks = locking.NewLocal()
	} else {
		rl, err := locking.NewRedis(ctx, rc, s.log)
		if err != nil {
			return fmt.Errorf("redis lease at %s (db %d): %w", rc.Addr, rc.DB, err)
		}
		s.locks = rl
	}
	s.closers.add(func(context.Context) error {
		_ = s.locks.Close() // a lease it could not give back expires by itself
		return nil
	})
	return nil
}

// openAgent takes the agent of the options, or builds the configured backend, and
// registers it for closing when it has a Close method.
func (s *Server) openAgent(deps serverDeps) error {
	ag := deps.agent
	if ag == nil {
		var err error
		if ag, err = newAgent(s.cfg, s.log, s.metrics.AgentRetry); err != nil {
			return err
		}
	}
	s.agent = ag
	if c, ok := ag.(interface{ Close() error }); ok {
		s.closers.add(func(context.Context) error {
			_ = c.Close() // idle connections and child processes: nothing to report
			return nil
		})
	}
	return nil
}

// startRunner creates the turn runner (its audit writer runs from here on) and
// registers it for closing; the WebSocket handler is made by listen, which knows the
// bound port (its loopback origins).
func (s *Server) startRunner(rate rateSpec, deps serverDeps) {
	tcfg := turn.Config{
		Policy:            s.policy,
		MemoryTimeout:     s.cfg.MemoryTimeout,
		MaxParts:          s.cfg.MaxParts,
		MaxPartBytes:      s.cfg.MaxPartBytes,
		MaxMessageBytes:   s.cfg.MaxMessageBytes,
		MaxStreamsPerPeer: s.cfg.MaxStreamsPerPeer,
		Observe:           s.metrics,
		SharedStore:       s.cfg.Store != "",
		MaxToolCalls:      s.cfg.AgentMaxToolCalls,
		ToolTime:          s.cfg.AgentToolTime,
		SignalWatch:       s.watchSignal(),
		TracerProvider:    s.cfg.TracerProvider,
	}
	if s.cfg.Store != "" && (s.cfg.RedisAddr != "" || s.cfg.RedisURL != "") {
		tcfg.LeaseTTL = s.cfg.LeaseTTL // leases shared by the instances: sweep for a stopped one's tasks
	}
	if box := s.toolBox(); box != nil {
		tcfg.Tools, s.toolbox = box, box // a nil *tools.Box in the interface would not read as "off"
		s.closers.add(func(context.Context) error { return box.Close() })
	}
	if s.cfg.BusyPolicy == "wait" {
		tcfg.BusyWait = s.cfg.BusyWait
	}
	s.pushTurnConfig(&tcfg)
	s.runner = turn.New(tcfg, s.ledger, s.locks, s.agent, s.log)
	s.handler = traceMethods(limitRate(s.runner, newRateLimiter(rate, nil), s.metrics), s.cfg.TracerProvider)
	s.closers.add(s.closeRunner)
	s.wsTune = deps.streaming
	s.streamStats = func() (int, int) { return s.runner.Streams(), s.ws.Stats().Conns } // s.ws is set before the listener serves
}

// bind opens the listener (nothing is served on it before listen) and registers it for
// closing, for a start that fails before listen. Errors: --allowed-hosts or --public-url
// (Validate reports them first), the listener.
func (s *Server) bind() error {
	hosts, err := s.cfg.allowedHosts()
	if err != nil {
		return err
	}
	s.hosts = hosts
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.closers.add(func(context.Context) error {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("close listener: %w", err)
		}
		return nil // closed already by the HTTP server's Shutdown
	})
	return s.bindGRPC()
}

// listen builds the WebSocket handler (its loopback origins need the bound port) and
// the router (see routes), and starts serving on the listener of bind; the HTTP server
// is registered for closing (see stopServing).
func (s *Server) listen(ctx context.Context) error {
	ln := s.ln
	wscfg := streaming.Config{AllowedOrigins: s.cfg.wsAllowedOrigins(ln.Addr()), Logger: s.log,
		MaxConnsPerPeer: s.cfg.wsConnsPerPeer(), PeerOf: wsPeer, OnLimit: s.metrics.LimitExceeded,
		SubscribeAs: wsSubscribeAs, SubscribeOnly: s.wsSubscribeOnly, TracerProvider: s.cfg.TracerProvider}
	if s.wsTune != nil {
		s.wsTune(&wscfg)
	}
	// Its requests are counted and timed like the HTTP bindings' (gateway_requests_total).
	wsd := a2a.NewDispatcher(s.handler, a2a.TransportConfig{Logger: s.log, ExtendedCard: s.extendedCard, Observe: s.metrics.observeRequest})
	s.ws = streaming.NewHandler(wsd, s.handler, wscfg)
	// No ReadTimeout: it would stay on the connection while an SSE response streams and
	// cut it; the guard bounds each request body instead, and lifts its deadline once
	// the body is read.
	s.http = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	s.http.RegisterOnShutdown(s.ws.Shutdown) // WebSockets are hijacked: Shutdown does not see them
	s.ready.Store(true)
	go func() { s.served <- s.http.Serve(ln) }() // exits when Close shuts the server down
	s.listenGRPC()
	s.closers.add(s.stopServing)
	logAuthMode(ctx, s.log, s.cfg.Peers, s.tokens)
	s.log.InfoContext(ctx, "gateway listening", "addr", ln.Addr().String(), "console", consoleURL(s.URL()), "config", s.cfg)
	return nil
}

// closeAfterFailedStart closes what a failed Open opened, as Close would; nothing
// runs yet, so it does not wait, but it is bounded by the shutdown timeout all the same.
func (s *Server) closeAfterFailedStart(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	return errors.Join(s.closers.closeAll(cctx)...)
}

// closers are the close functions of a Server's resources, in the order opened; they
// are run in reverse, once, by Close or by a failed Open.
type closers []func(ctx context.Context) error

func (c *closers) add(f func(ctx context.Context) error) { *c = append(*c, f) }

// closeAll runs every close function, the last registered first, and returns their
// errors.
func (c *closers) closeAll(ctx context.Context) []error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		if err := (*c)[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	*c = nil
	return errs
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns the base URL of the server ("http://127.0.0.1:PORT/").
func (s *Server) URL() string { return "http://" + s.Addr() + "/" }

// routes is the one router: echo, every route of the listener. Before routing, so that
// every request meets them (unknown paths included), come the listener-wide guard (see
// guard) and the request id (see tagRequest); then panic recovery; then, on the A2A
// routes (POST /, POST /a2a, GET /ws, and the HTTP+JSON binding's routes, see
// mountHTTPJSON), the trace context and server span (see traceRequest), then peer
// authentication (see peerAuth, wsAuth).
func (s *Server) routes() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(io.Discard)
	e.Pre(s.guard(), s.requestIDMiddleware) // the guard first: a refused Host costs nothing more
	e.Use(middleware.Recover())
	// The card stays public; it declares the bearer scheme when peers authenticate.
	card := s.cardConfig()
	tcfg := a2a.TransportConfig{
		Logger:       s.log,
		ExtendedCard: s.extendedCard,
		Observe:      s.metrics.observeRequest,
	}
	rpc, peer := echo.WrapHandler(a2a.NewJSONRPCHandler(s.handler, tcfg)), echo.WrapMiddleware(s.peerAuth)
	e.POST("/", rpc, s.traceRequest(bindingJSONRPC), peer)
	e.GET("/", s.rootPage(card))
	e.POST("/a2a", rpc, s.traceRequest(bindingJSONRPC), peer)
	e.Match([]string{http.MethodGet, http.MethodHead}, "/ws", echo.WrapHandler(s.ws), s.traceRequest(bindingJSONRPC), echo.WrapMiddleware(s.wsAuth))
	pprof := echo.WrapHandler(pprofHandler(s.adminGate()))
	e.Any("/debug/pprof", pprof) // redirected to /debug/pprof/
	e.Any("/debug/pprof/*", pprof)
	if s.toolbox != nil {
		// A turn's process calls its tools with its turn-bound token (not a peer's).
		e.POST(tools.ToolsPath, echo.WrapHandler(s.toolbox), s.traceRequest(""))
	}
	e.GET(a2a.CardPath, echo.WrapHandler(a2a.NewCardHandler(card)))
	if s.push != nil {
		e.GET(push.JWKSPath, echo.WrapHandler(s.push.jwksHandler()))
	}
	e.GET(metricsPath, echo.WrapHandler(s.metrics.handler(s.adminGate(), s.log)))
	mountAdmin(e, s.adminService(), s.adminGate(), s.log.With("component", "admin"))
	e.Any(console.Prefix+"*", echo.WrapHandler(s.consoleHandler()))
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", func(c echo.Context) error {
		if !s.ready.Load() {
			return c.String(http.StatusServiceUnavailable, "shutting down\n")
		}
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		var se *ledger.StorageError
		if errors.As(s.ledger.Ready(ctx), &se) {
			return c.String(http.StatusServiceUnavailable, "ledger storage "+string(se.Cause)+": turns fail until it takes writes again\n")
		}
		if err := s.locks.Ping(ctx); err != nil {
			return c.String(http.StatusServiceUnavailable, "lease service unavailable: turns fail closed until it is back\n")
		}
		if q := s.ledger.Quarantined(); len(q) > 0 {
			return c.String(http.StatusOK, readyDetail(q))
		}
		return c.String(http.StatusOK, "ready\n")
	})
	s.mountHTTPJSON(e, tcfg) // last: it reserves the other routes' first segments
	return e
}

// Serve blocks until ctx is done, then closes s (see [Server.Close]) within
// Config.ShutdownTimeout and returns Close's error: `gateway serve` until SIGINT or
// SIGTERM. s serves from Open on; Serve only waits.
func (s *Server) Serve(ctx context.Context) error {
	<-ctx.Done()
	shCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	return s.Close(shCtx)
}

// Close shuts down in order: stop being ready and refuse new turns, let HTTP requests and
// running turns finish until ctx is done (then cancel them), close the agent, the lease
// service and the ledger (the reverse of the order Open opened them in). Closing
// twice is a no-op. Errors: the phases that did not finish by the deadline, and the
// ledger's close error, joined.
func (s *Server) Close(ctx context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.ready.Store(false)
	s.log.InfoContext(ctx, "shutting down: refusing new turns, waiting for running ones", "running", s.runner.Running())
	errs := s.closers.closeAll(ctx)
	s.log.InfoContext(ctx, "gateway stopped")
	return errors.Join(errs...)
}

// stopServing stops the HTTP server, the gRPC binding and the WebSocket connections
// while the runner closes (running turns go on until answerGrace before ctx is done,
// then are canceled, and their requests are answered with their failed tasks in the time
// left), and waits for all four.
func (s *Server) stopServing(ctx context.Context) error {
	var errs []error
	runnerCtx, cancel := runnerContext(ctx)
	defer cancel()
	runnerDone := make(chan error, 1)
	go func() { runnerDone <- s.closeRunner(runnerCtx) }() // exits when every turn has ended
	grpcDone := make(chan error, 1)
	go func() { grpcDone <- s.stopGRPC(ctx) }() // exits when the gRPC calls have ended, at the latest at ctx's end
	if err := s.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		_ = s.http.Close()
	}
	if err := s.ws.Wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("websocket connections still open at the deadline: %w", err))
	}
	if err := <-runnerDone; err != nil {
		errs = append(errs, err)
	}
	if err := <-grpcDone; err != nil {
		errs = append(errs, err)
	}
	if err := <-s.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	return errors.Join(errs...)
}

// answerGrace is the most of the shutdown time kept, after the running turns are
// canceled, for the requests waiting on them to be answered with their failed tasks ("the
// gateway shut down during this turn; send the message again") rather than cut off.
const answerGrace = time.Second

// runnerContext is ctx for the runner's close: its deadline, when ctx has one, comes
// answerGrace (at most a tenth of the time left) earlier.
func runnerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-min(answerGrace, time.Until(dl)/10)))
}

// closeRunner closes the turn runner once (stopServing and the runner's own closer both
// call it; the second call returns nil).
func (s *Server) closeRunner(ctx context.Context) error {
	if !s.runnerClosed.CompareAndSwap(false, true) {
		return nil
	}
	if err := s.runner.Close(ctx); err != nil {
		return fmt.Errorf("running turns canceled at the deadline: %w", err)
	}
	return nil
}

// newAgent builds the configured agent backend; onRetry counts the chat backends'
// retries (nil: not counted).
func newAgent(cfg Config, logger *slog.Logger, onRetry func(reason string)) (agent.Agent, error) {
	switch cfg.Agent {
	case "openai":
		return agent.NewOpenAI(agent.OpenAIConfig{URL: cfg.AgentURL, Model: cfg.AgentModel, APIKey: cfg.AgentKey, Timeout: cfg.AgentTimeout, OnRetry: onRetry,
			TracerProvider: cfg.TracerProvider}, logger)
	case "anthropic":
		return agent.NewAnthropic(agent.AnthropicConfig{URL: cfg.AgentURL, Model: cfg.AgentModel, APIKey: cfg.AgentKey, Timeout: cfg.AgentTimeout, OnRetry: onRetry,
			TracerProvider: cfg.TracerProvider}, logger)
	case "a2a":
		return agent.NewA2ARelay(agent.A2ARelayConfig{URL: cfg.AgentURL, Token: cfg.AgentKey, Timeout: cfg.AgentTimeout,
			TracerProvider: cfg.TracerProvider}, logger)
	case "tck":
		return agent.TCK{Hold: 2 * agent.TCKStreamingTimeout(os.Getenv("TCK_STREAMING_TIMEOUT"))}, nil
	case "exec":
		return agent.NewExec(agent.ExecConfig{Command: cfg.AgentCommand, Input: cfg.AgentInput, Timeout: cfg.AgentTimeout}, logger)
	default:
		return agent.Echo{Delay: cfg.EchoDelay}, nil
	}
}
