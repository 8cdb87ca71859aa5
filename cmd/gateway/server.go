package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/a2a-gateway/gateway/streaming"
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
	ledger *ledger.Store
	locks  locker
	agent  agent.Agent
	policy projection.Policy
	runner *turn.Runner
	http   *http.Server
	ln     net.Listener
	ready  atomic.Bool
	served chan error
	closed atomic.Bool

	// tokens authenticates peers on the A2A routes (see peerAuth); empty: everyone is
	// "local".
	tokens *peerTokens
	// metrics is the Prometheus registry and the turn.Observer (see metrics.go).
	metrics *metrics
	// streamStats reports the open A2A streams and WebSocket connections for the
	// gateway_active_streams and gateway_websocket_connections gauges; nil reports 0, 0.
	// OpenServer sets it to the runner's stream count (SSE and WebSocket subscriptions)
	// and 0 connections; replace it there, before the listener starts, to report
	// WebSocket connections. It is called on every scrape, so it must be cheap and safe
	// for concurrent use.
	streamStats func() (streams, wsConns int)
	ws          *streaming.Handler
}

// serverOption adjusts a Server before it starts (tests swap the agent or tune the
// WebSocket handler).
type serverOption func(*serverDeps)

type serverDeps struct {
	agent     agent.Agent
	streaming func(*streaming.Config) // adjusts the WebSocket config before NewHandler; nil: none
}

// withAgent makes the server use a instead of the configured backend.
func withAgent(a agent.Agent) serverOption { return func(d *serverDeps) { d.agent = a } }

// withStreaming lets f adjust the WebSocket handler's config (send buffer, slow-consumer
// wait, timeouts) before the handler is built.
func withStreaming(f func(*streaming.Config)) serverOption {
	return func(d *serverDeps) { d.streaming = f }
}

// OpenServer opens the ledger, recovers interrupted turns, and starts listening.
func OpenServer(ctx context.Context, cfg Config, logger *slog.Logger, opts ...serverOption) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	rate, err := parseRate(cfg.RateLimit)
	if err != nil {
		return nil, err // Validate reported it already; kept for a direct caller
	}
	s := &Server{cfg: cfg, log: logger, served: make(chan error, 1), tokens: newPeerTokens(cfg.Peers)}
	s.metrics = newMetrics(func() (int, int) {
		if s.streamStats == nil {
			return 0, 0
		}
		return s.streamStats()
	})
	led, err := ledger.Open(filepath.Join(cfg.DataDir, "ledger.db"), ledger.Options{OnCommit: s.metrics.observeCommit, SalvageDamaged: true}, logger)
	if err != nil {
		return nil, fmt.Errorf("open ledger in %s: %w", cfg.DataDir, err)
	}
	s.ledger = led
	if cfg.RedisAddr != "" {
		rl, err := locking.NewRedis(ctx, locking.RedisConfig{Addr: cfg.RedisAddr, TTL: cfg.LeaseTTL}, logger)
		if err != nil {
			_ = led.Close()
			return nil, fmt.Errorf("redis lease at %s: %w", cfg.RedisAddr, err)
		}
		s.locks = rl
	} else {
		s.locks = locking.NewLocal()
	}
	deps := serverDeps{}
	for _, o := range opts {
		o(&deps)
	}
	if deps.agent == nil {
		ag, err := newAgent(cfg, logger)
		if err != nil {
			_ = s.locks.Close()
			_ = led.Close()
			return nil, err
		}
		deps.agent = ag
	}
	ag := deps.agent
	s.agent = ag
	s.policy = cfg.policy()
	if err := s.policy.Validate(); err != nil {
		_ = s.locks.Close()
		_ = led.Close()
		return nil, fmt.Errorf("projection policy: %w", err)
	}
	tcfg := turn.Config{
		Policy:            s.policy,
		MaxParts:          cfg.MaxParts,
		MaxPartBytes:      cfg.MaxPartBytes,
		MaxMessageBytes:   cfg.MaxMessageBytes,
		MaxStreamsPerPeer: cfg.MaxStreamsPerPeer,
		Observe:           s.metrics,
	}
	if rl := newRateLimiter(rate, nil); rl != nil {
		tcfg.RateLimit = rl // a nil *rateLimiter in the interface would not read as "off"
	}
	if cfg.BusyPolicy == "wait" {
		tcfg.BusyWait = cfg.BusyWait
	}
	s.runner = turn.New(tcfg, led, s.locks, ag, logger)
	wscfg := streaming.Config{AllowedOrigins: cfg.wsOrigins(), Logger: logger}
	if deps.streaming != nil {
		deps.streaming(&wscfg)
	}
	s.ws = streaming.NewHandler(a2a.NewDispatcher(s.runner, a2a.TransportConfig{Logger: logger}), s.runner, wscfg)
	s.streamStats = func() (int, int) { return s.runner.Streams(), s.ws.Stats().Conns }
	if n, err := s.runner.Recover(ctx); err != nil {
		_ = s.locks.Close()
		_ = led.Close()
		return nil, err
	} else if n > 0 {
		logger.Warn("marked turns interrupted by the last stop as failed", "tasks", n)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		_ = s.locks.Close()
		_ = led.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	s.ln = ln
	// GET /ws is served before echo: a hijacked connection's reader goroutine lives in
	// this handler for the connection's life, and behind echo's call chain its stack
	// grows to 8 KiB; served directly it stays at 4 KiB (idle connections: 22.8 KiB
	// instead of 27.5 KiB each). It has the same peer authentication.
	mux := http.NewServeMux()
	mux.Handle("GET /ws", s.peerAuth(s.ws))
	mux.Handle("/debug/pprof/", pprofHandler(cfg.AdminToken))
	mux.Handle("/", s.routes())
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	s.http.RegisterOnShutdown(s.ws.Shutdown) // WebSockets are hijacked: Shutdown does not see them
	s.ready.Store(true)
	go func() { s.served <- s.http.Serve(ln) }() // exits when Close shuts the server down
	logAuthMode(logger, cfg.Peers, s.tokens)
	logger.Info("gateway listening", "addr", ln.Addr().String(), "config", cfg)
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns the base URL of the server ("http://127.0.0.1:PORT/").
func (s *Server) URL() string { return "http://" + s.Addr() + "/" }

func (s *Server) routes() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(io.Discard)
	e.Use(middleware.Recover())
	e.Use(middleware.RequestID())
	// The card stays public; it declares the bearer scheme when peers authenticate.
	card := a2a.CardConfig{URL: s.cfg.PublicURL, BearerAuth: s.tokens.enabled()}
	tcfg := a2a.TransportConfig{
		Logger:       s.log,
		ExtendedCard: func(r *http.Request) ([]byte, error) { return a2a.CardJSON(card, r) },
		Observe:      s.metrics.observeRequest,
	}
	rpc := s.peerAuth(a2a.NewJSONRPCHandler(s.runner, tcfg))
	e.POST("/", echo.WrapHandler(rpc))
	e.POST("/a2a", echo.WrapHandler(rpc))
	e.GET(a2a.CardPath, echo.WrapHandler(a2a.NewCardHandler(card)))
	e.GET(metricsPath, echo.WrapHandler(s.metrics.handler(s.cfg.AdminToken, s.log)))
	mountAdmin(e, s.adminService(), s.cfg.AdminToken, s.log.With("component", "admin"))
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", func(c echo.Context) error {
		if !s.ready.Load() {
			return c.String(http.StatusServiceUnavailable, "shutting down\n")
		}
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if err := s.locks.Ping(ctx); err != nil {
			return c.String(http.StatusServiceUnavailable, "lease service unavailable: turns fail closed until it is back\n")
		}
		if q := s.ledger.Quarantined(); len(q) > 0 {
			return c.String(http.StatusOK, readyDetail(q))
		}
		return c.String(http.StatusOK, "ready\n")
	})
	return e
}

// Close shuts down in order: stop being ready and refuse new turns, let HTTP requests and
// running turns finish until ctx is done (then cancel them), close the ledger. Closing
// twice is a no-op.
func (s *Server) Close(ctx context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.ready.Store(false)
	s.log.Info("shutting down: refusing new turns, waiting for running ones", "running", s.runner.Running())
	var errs []error
	runnerDone := make(chan error, 1)
	go func() { runnerDone <- s.runner.Close(ctx) }() // exits when every turn has ended
	if err := s.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		_ = s.http.Close()
	}
	if err := s.ws.Wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("websocket connections still open at the deadline: %w", err))
	}
	if err := <-runnerDone; err != nil {
		errs = append(errs, fmt.Errorf("running turns canceled at the deadline: %w", err))
	}
	if err := <-s.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	_ = s.locks.Close()
	if c, ok := s.agent.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	if err := s.ledger.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close ledger: %w", err))
	}
	s.log.Info("gateway stopped")
	return errors.Join(errs...)
}

// newAgent builds the configured agent backend.
func newAgent(cfg Config, logger *slog.Logger) (agent.Agent, error) {
	switch cfg.Agent {
	case "openai":
		return agent.NewOpenAI(agent.OpenAIConfig{URL: cfg.AgentURL, Model: cfg.AgentModel, APIKey: cfg.AgentKey, Timeout: cfg.AgentTimeout}, logger)
	case "anthropic":
		return agent.NewAnthropic(agent.AnthropicConfig{URL: cfg.AgentURL, Model: cfg.AgentModel, APIKey: cfg.AgentKey, Timeout: cfg.AgentTimeout}, logger)
	case "a2a":
		return agent.NewA2ARelay(agent.A2ARelayConfig{URL: cfg.AgentURL, Token: cfg.AgentKey, Timeout: cfg.AgentTimeout}, logger)
	case "exec":
		return agent.NewExec(agent.ExecConfig{Command: cfg.AgentCommand, Input: cfg.AgentInput, Timeout: cfg.AgentTimeout}, logger)
	default:
		return agent.Echo{Delay: cfg.EchoDelay}, nil
	}
}
