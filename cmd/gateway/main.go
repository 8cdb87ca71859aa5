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
	"syscall"

	"github.com/google/uuid"
)

const usage = `gateway: an A2A conversation gateway.

Agents hold multi-turn conversations with the agent behind this gateway over the
Agent2Agent protocol (JSON-RPC, A2A v1.0 and v0.3 on one endpoint). Each contextId is
one conversation, kept in a durable append-only ledger; one task runs per contextId.

Usage:
  gateway serve [flags]        run the gateway (embedded defaults: bbolt in ./data,
                               in-process lease, echo agent, 127.0.0.1:9900)
  gateway conversations list|show|export   operator view of the ledger
  gateway ledger verify [CONTEXT_ID]      check the ledger's hash chains
  gateway ledger salvage --out FILE       copy the intact conversations of a damaged ledger
  gateway send TARGET [MESSAGE|-]         talk to a peer agent (--list: the targets)
  gateway bench [flags] URL    load-test an A2A JSON-RPC server (requests/s, latency)
  gateway help [command]       show help

Run 'gateway COMMAND --help' for a command's flags.
`

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
// error (including a contextId several peers use, given without --peer), 1 otherwise.
func exitCode(err error) int {
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)) || errors.As(err, new(benchUsageError)) || errors.Is(err, errAmbiguousContext):
		return 2
	}
	return 1
}

// usageError is a command-line mistake (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run dispatches a command line; it returns when the command is done (serve: when ctx is
// canceled and shutdown has finished).
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, lookupEnv, stderr)
	case "bench":
		return runBench(ctx, rest, stdout, stderr)
	case "conversations":
		return runConversations(ctx, rest, lookupEnv, stdout, stderr)
	case "ledger":
		return runLedger(ctx, rest, lookupEnv, stdout, stderr)
	case "send":
		return runSend(ctx, rest, lookupEnv, os.Stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			return run(ctx, []string{rest[0], "--help"}, lookupEnv, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return usageError{fmt.Sprintf("unknown command %q", cmd)}
	}
}

func runServe(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	// The config file's keys are checked against the flags, so bind them once to learn
	// the names, then bind for real with the file's values under env and flags.
	probe := flag.NewFlagSet("serve", flag.ContinueOnError)
	bindServe(probe, lookupEnv, nil, new(Config))
	var file map[string]string
	if path, explicit := configPath(args, lookupEnv); path != "" {
		f, err := loadConfigFile(path, probe)
		if err != nil && (explicit || !errors.Is(err, os.ErrNotExist)) {
			return usageError{err.Error()}
		}
		file = f
		if err == nil {
			peers, err := loadPeersFile(path, lookupEnv)
			if err != nil {
				return usageError{err.Error()}
			}
			cfg.Peers = peers
		}
	}
	ef := bindServe(fs, lookupEnv, file, &cfg)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: gateway serve [flags]

Runs the gateway until SIGINT or SIGTERM. With no flags: the ledger in ./data (bbolt,
fsync'd), the in-process lease (one running task per contextId), the echo agent, and
http://127.0.0.1:9900/ serving:
  POST /  and  POST /a2a          JSON-RPC 2.0, A2A v1.0 (SendMessage, ...) and v0.3 (message/send, ...)
  GET  /ws                         WebSocket: JSON-RPC frames, any A2A method, conversations/subscribe
                                   {contextId, afterSeq} to watch (and resume) a whole context
  GET  /.well-known/agent-card.json   the agent card
  GET  /healthz, /readyz           liveness and readiness (503 while shutting down)
  GET  /metrics                    Prometheus metrics (loopback, or --admin-token)
  GET  /debug/pprof/               Go profiles (same rule)
  /admin/v1/...                    the operator API (gateway conversations ...)

Peers (their bearer tokens, and where gateway send reaches them) are listed under
peers: in the config file; without accept tokens every caller is the peer "local" and
only loopback addresses may be served.

Every flag can also be set with its GATEWAY_* environment variable or in the YAML
config file (--config, default ./gateway.yaml if present; keys are the flag names).
Precedence: flag > environment > config file > default.

Flags:
`)
		printFlags(stderr, fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("serve takes no arguments, got %q", fs.Args())}
	}
	if err := errors.Join(ef.errs...); err != nil {
		return usageError{err.Error()}
	}
	if cfg.Agent == "openai" || cfg.Agent == "anthropic" || (cfg.Agent == "a2a" && cfg.AgentKeyEnv != "") {
		cfg.AgentKey, _ = lookupEnv(cfg.agentKeyEnv())
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	logger := newLogger(cfg, stderr)
	if (cfg.Agent == "openai" || cfg.Agent == "anthropic") && cfg.AgentKey == "" {
		logger.Warn("no API key for the agent backend: requests go without one", "variable", cfg.agentKeyEnv())
	}
	slog.SetDefault(logger)
	if _, set := lookupEnv("GOGC"); !set {
		// The live heap is small and short-lived garbage dominates: collecting at 4× the
		// live heap instead of 2× cut GC CPU enough for ~20% more sends/s at concurrency 64.
		debug.SetGCPercent(400)
	}
	s, err := OpenServer(ctx, cfg, logger)
	if err != nil {
		return err
	}
	<-ctx.Done()
	shCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := s.Close(shCtx); err != nil {
		logger.Error("shutdown incomplete", "err", err)
		return err
	}
	return nil
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
