// Command gateway is the A2A conversation gateway: `gateway serve` runs it, `gateway bench`
// load-tests any A2A JSON-RPC server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/internal/logctx"
	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/server"
)

const usage = `gateway: an A2A conversation gateway.

Agents hold multi-turn conversations with the agent behind this gateway over the
Agent2Agent protocol (JSON-RPC, A2A v1.0 and v0.3 on one endpoint). Each contextId is
one conversation, kept in a durable append-only ledger; one task runs per contextId.

Usage:
  gateway serve [flags]        run the gateway (embedded defaults: bbolt in ./data,
                               in-process lease, echo agent, 127.0.0.1:9900)
  gateway conversations list|show|export|replay   operator view of the ledger
  gateway ledger verify [CONTEXT_ID]      check the ledger's hash chains
  gateway ledger salvage --out FILE       copy the intact conversations of a damaged ledger
  gateway send TARGET [MESSAGE|-]         talk to a peer agent (--list: the targets)
  gateway bench [flags] URL    load-test an A2A JSON-RPC server (requests/s, latency)
  gateway help [command]       show help

Run 'gateway COMMAND --help' for a command's flags.
`

// commands are the top-level commands, as an unknown one lists them.
var commands = []string{"serve", "conversations", "ledger", "send", "bench", "help"}

func main() {
	// Random (v4) UUIDs name messages and artifacts on every turn: take their randomness
	// from a buffered pool instead of one getrandom call each. Before anything runs, as
	// the package requires.
	uuid.EnableRandPool()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	if code := exitCode(err); code != 0 {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(code)
	}
}

// exitCode is the exit status for run's error: 0 for none (or --help), 2 for a usage
// error (an unknown command or flag included, and a contextId several peers use, given
// without --peer), 1 otherwise.
func exitCode(err error) int {
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)) || errors.As(err, new(benchUsageError)) || errors.Is(err, errAmbiguousContext) || errors.Is(err, errSeqPastEnd):
		return 2
	}
	return 1
}

// usageError is a command-line mistake (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run dispatches a command line; it returns when the command is done (serve: when ctx is
// canceled and shutdown has finished). Help asked for is printed on stdout (the error is
// nil or flag.ErrHelp); a usage error is returned for main to print, after the usage on
// stderr only when no command was given.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, lookupEnv, stdout, stderr)
	case "bench":
		return runBench(ctx, rest, stdout, stderr)
	case "conversations":
		return runConversations(ctx, rest, lookupEnv, stdout, stderr)
	case "ledger":
		return runLedger(ctx, rest, lookupEnv, stdout, stderr)
	case "send":
		return runSend(ctx, rest, lookupEnv, os.Stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		return runHelp(ctx, rest, lookupEnv, stdout, stderr)
	default:
		return &unknownCommandError{Name: cmd, Commands: commands}
	}
}

// runHelp is `gateway help [COMMAND [SUBCOMMAND]]` (or -h, --help): the usage, or the
// command's help as `gateway COMMAND [SUBCOMMAND] --help` prints it. Help about help is
// the usage: the command line is never dispatched back to help.
func runHelp(ctx context.Context, topic []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(topic) == 0 || isHelpArg(topic[0]) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if !slices.Contains(commands, topic[0]) {
		return &unknownCommandError{Name: topic[0], Commands: commands}
	}
	return run(ctx, append(slices.Clone(topic), "--help"), lookupEnv, stdout, stderr)
}

// runServe runs `gateway serve` until ctx is done, then shuts the server down. ctx done
// (SIGINT, SIGTERM) is a clean stop, also while the server is still starting: nil.
func runServe(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	cfg, err := serveConfig(args, lookupEnv, stdout)
	if err != nil {
		return err
	}
	logger := newLogger(cfg, stderr)
	if (cfg.Agent == "openai" || cfg.Agent == "anthropic") && cfg.AgentKey == "" {
		logger.WarnContext(ctx, "no API key for the agent backend: requests go without one", "variable", cfg.AgentKeyVariable())
	}
	slog.SetDefault(logger)
	if _, set := lookupEnv("GOGC"); !set {
		// GOGC 400 while the live heap is small, bounded headroom above (gctune.go).
		debug.SetGCPercent(gcPercentMax)
		tctx, stopTune := context.WithCancel(ctx)
		var tune sync.WaitGroup
		tune.Go(func() { tuneGC(tctx) }) // exits when runServe returns
		defer func() { stopTune(); tune.Wait() }()
	}
	tel, flush, err := serveTracing(ctx, lookupEnv, logger)
	if err != nil {
		return err
	}
	defer flush() // after the server has closed: its last spans go out too
	cfg.TracerProvider = tel.Provider
	s, err := server.Open(ctx, cfg, logger)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			logger.InfoContext(ctx, "start-up interrupted: nothing is left running", "reason", err)
			return nil
		}
		return err
	}
	if err := s.Serve(ctx); err != nil {
		logger.ErrorContext(context.WithoutCancel(ctx), "shutdown incomplete", "err", err)
		return err
	}
	return nil
}

// serveConfig reads serve's configuration: the config file, the environment, the flags
// (in rising precedence), the agent's API key. --help prints serve's help on stdout and
// returns flag.ErrHelp; other errors are a *flagError or a usageError.
func serveConfig(args []string, lookupEnv func(string) (string, bool), stdout io.Writer) (server.Config, error) {
	var cfg server.Config
	// The config file's problems are reported after the flags, so that --help always
	// prints the help.
	cf, fileErr := readConfigFile(args, lookupEnv)
	peers, peersErr := cf.peers(lookupEnv)
	cfg.Peers = peers
	fs := newFlagSet("serve")
	ef := bindServe(fs, lookupEnv, cf.values, &cfg)
	ef.errs = append([]error{fileErr, peersErr}, ef.errs...)
	positional, err := parseFlags(fs, "serve", args, false, func() {
		fmt.Fprint(stdout, serveUsage)
		printFlags(stdout, fs)
	})
	if err != nil {
		return cfg, err
	}
	if len(positional) > 0 {
		return cfg, usageError{fmt.Sprintf("serve takes no arguments, got %q", positional)}
	}
	if err := errors.Join(ef.errs...); err != nil {
		return cfg, usageError{err.Error()}
	}
	if cfg.Agent == "openai" || cfg.Agent == "anthropic" || (cfg.Agent == "a2a" && cfg.AgentKeyEnv != "") {
		cfg.AgentKey, _ = lookupEnv(cfg.AgentKeyVariable())
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err.Error()}
	}
	return cfg, nil
}

// serveUsage heads `gateway serve --help`; the flags follow.
const serveUsage = `Usage: gateway serve [flags]

Runs the gateway until SIGINT or SIGTERM. With no flags: the ledger in ./data (bbolt,
fsync'd), the in-process lease (one running task per contextId), the echo agent, and
http://127.0.0.1:9900/ serving:
  POST /  and  POST /a2a          JSON-RPC 2.0, A2A v1.0 (SendMessage, ...) and v0.3 (message/send, ...)
  GET  /ws                         WebSocket: JSON-RPC frames, any A2A method, conversations/subscribe
                                   {contextId, afterSeq} to watch (and resume) a whole context
  GET  /.well-known/agent-card.json   the agent card
  GET  /.well-known/jwks.json      the public key that signs push notifications (with --push)
  GET  /                           a short page for a browser: the agent, these URLs, the docs
  GET  /console                    the operator console in a browser: conversations, timelines,
                                   live replies, what the agent saw, health (the admin API's rule:
                                   loopback, or --admin-token with a login form)
  GET  /healthz, /readyz           liveness and readiness (503 while shutting down or while the ledger cannot commit)
  GET  /metrics                    Prometheus metrics (loopback, or --admin-token)
  GET  /debug/pprof/               Go profiles (same rule)
  /admin/v1/...                    the operator API (gateway conversations ...): reads from
                                   loopback, or --admin-token; writes (POST /admin/v1/outbound,
                                   gateway send's record) need a token always: --admin-token,
                                   or without one the random token written to <data-dir>/admin.token
                                   (mode 0600) at each start. Behind a local reverse proxy every
                                   client is loopback: set --admin-token there.

Peers (their bearer tokens, and where gateway send reaches them) are listed under
peers: in the config file; without accept tokens every caller is the peer "local" and
only loopback addresses may be served.

Every response carries an X-Request-Id header: the caller's, when it is 1 to 64
characters of [A-Za-z0-9._-], else a new one. Every log line of that request (its
turn included) carries it as request_id.

Secrets stay out of flags: the openai/anthropic key is read from the variable
--agent-key-env names (default OPENAI_API_KEY or ANTHROPIC_API_KEY; missing against the
provider's public API, start-up fails), and a Redis password belongs in
GATEWAY_REDIS_URL (redis://[user:password@]host[:port][/db], rediss:// for TLS).

Tracing (W3C traceparent read on every A2A request, sent on every outbound call) is set
by the standard OpenTelemetry variables only: OTEL_EXPORTER_OTLP_ENDPOINT (OTLP/HTTP;
unset: off, a caller's traceparent only passes through), OTEL_SERVICE_NAME (default
a2a-gateway), OTEL_TRACES_SAMPLER (default parentbased_always_on),
OTEL_TRACES_EXPORTER=none (trace ids made for the ledger, nothing exported),
OTEL_SDK_DISABLED=true (off, whatever else is set).

Every flag can also be set with its GATEWAY_* environment variable or in the YAML
config file (--config, default ./gateway.yaml if present; keys are the flag names).
Precedence: flag > environment > config file > default.

Flags:
`

// newLogger is the root logger: JSON (or text) on w at the configured level, wrapped so
// that lines logged with a request's context carry its request id (package logctx) and,
// when the request is traced, its trace_id and span_id (package internal/tracing).
func newLogger(cfg server.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(tracing.NewLogHandler(logctx.NewHandler(slog.NewTextHandler(w, opts))))
	}
	return slog.New(tracing.NewLogHandler(logctx.NewHandler(slog.NewJSONHandler(w, opts))))
}
