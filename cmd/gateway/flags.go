package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/server"
	"go.yaml.in/yaml/v3"
)

// envFlags binds flags whose defaults come from GATEWAY_* variables, collecting bad
// environment values as errors.
type envFlags struct {
	fs     *flag.FlagSet
	lookup func(string) (string, bool)
	file   map[string]string // values from the config file, by flag name
	errs   []error
}

func envName(flagName string) string {
	return "GATEWAY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// env returns the configured value of a flag below the command line: the GATEWAY_*
// variable, else the config file.
func (e *envFlags) env(name string) (string, bool) {
	if v, ok := e.lookup(envName(name)); ok {
		return v, true
	}
	v, ok := e.file[name]
	return v, ok
}

func (e *envFlags) String(p *string, name, def, usage string) {
	if v, ok := e.env(name); ok {
		def = v
	}
	e.fs.StringVar(p, name, def, usage+" (env "+envName(name)+")")
}

func (e *envFlags) Duration(p *time.Duration, name string, def time.Duration, usage string) {
	if v, ok := e.env(name); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: not a duration (e.g. 250ms, 5s)", envName(name), v))
		} else {
			def = d
		}
	}
	e.fs.DurationVar(p, name, def, usage+" (env "+envName(name)+")")
}

func (e *envFlags) Int(p *int, name string, def int, usage string) {
	if v, ok := e.env(name); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: not an integer", envName(name), v))
		} else {
			def = n
		}
	}
	e.fs.IntVar(p, name, def, usage+" (env "+envName(name)+")")
}

func (e *envFlags) Bool(p *bool, name string, def bool, usage string) {
	if v, ok := e.env(name); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: not a boolean", envName(name), v))
		} else {
			def = b
		}
	}
	e.fs.BoolVar(p, name, def, usage+" (env "+envName(name)+")")
}

func (e *envFlags) Level(p *slog.Level, name string, def slog.Level, usage string) {
	if v, ok := e.env(name); ok {
		if err := def.UnmarshalText([]byte(v)); err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: not a log level (debug, info, warn, error)", envName(name), v))
		}
	}
	*p = def
	e.fs.Var(levelFlag{p}, name, usage+" (env "+envName(name)+")")
}

// levelFlag is a log level flag whose error lists the levels.
type levelFlag struct{ p *slog.Level }

func (f levelFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

func (f levelFlag) Set(s string) error {
	if err := f.p.UnmarshalText([]byte(s)); err != nil {
		return errors.New("want debug, info, warn or error")
	}
	return nil
}

// bindServe defines serve's flags on fs.
func bindServe(fs *flag.FlagSet, lookup func(string) (string, bool), file map[string]string, cfg *server.Config) *envFlags {
	e := &envFlags{fs: fs, lookup: lookup, file: file}
	var configPath string
	fs.StringVar(&configPath, "config", "", "YAML config file whose keys are these flags' names (default ./gateway.yaml if present) (env GATEWAY_CONFIG)")
	e.String(&cfg.Addr, "addr", "127.0.0.1:9900", "address to listen on; without peer tokens only loopback addresses are allowed")
	e.String(&cfg.DataDir, "data-dir", "./data", "directory of the ledger (bbolt file ledger.db); one gateway process per directory")
	e.String(&cfg.Store, "store", "", "the ledger in PostgreSQL, shared by every gateway instance that names it: postgres://user:password@host:port/db (prefer the env variable to the flag, which other users can see in ps; the password is never logged); empty: the bbolt ledger in --data-dir (which still holds admin.token)")
	e.String(&cfg.Agent, "agent", "echo", "agent backend that produces replies: echo (replies \"echo: <text>\"), openai (any OpenAI-compatible Chat Completions endpoint), anthropic (Messages API), exec (a local command per turn), a2a (relay to an upstream A2A agent at --agent-url), tck (the agent the A2A TCK expects: conformance runs only, not for production; see docs/conformance.md)")
	e.String(&cfg.AgentURL, "agent-url", "", "openai/anthropic: the API base URL (default: the provider's public API); a2a: the upstream agent's URL (required)")
	e.String(&cfg.AgentModel, "agent-model", "", "openai/anthropic: the model name (required for them)")
	e.String(&cfg.AgentKeyEnv, "agent-key-env", "", "openai/anthropic: name of the environment variable holding the API key (default: OPENAI_API_KEY for openai, ANTHROPIC_API_KEY for anthropic); without a key only a custom --agent-url starts; a2a: the variable holding the upstream's bearer token (default: none)")
	e.String(&cfg.AgentCommand, "agent-command", "", "exec: the command, run with sh -c once per turn; its stdout streams as the reply")
	e.String(&cfg.AgentInput, "agent-input", "text", "exec: what the command reads on stdin: text (the rendered prompt) or json (contextId, taskId, peer, text, prompt, request)")
	e.String(&cfg.AgentTools, "agent-tools", "", "the tools the openai/anthropic agent may call: none, read (peers_list, conversation_history) or all (and peer_send); default all when peers are configured, else none")
	e.Int(&cfg.AgentMaxToolCalls, "agent-max-tool-calls", 8, "most tool calls in one turn; past it the reply ends with the text so far and a note")
	e.Duration(&cfg.AgentToolTime, "agent-tool-time", 2*time.Minute, "the longest a turn's model may spend calling tools; past it the reply ends with the text so far and a note")
	e.Int(&cfg.AgentHopLimit, "agent-hop-limit", 4, "most agent-to-agent hops a message may have travelled for this gateway's agent to call out")
	e.Duration(&cfg.AgentTimeout, "agent-timeout", 300*time.Second, "the longest one agent reply may take; exec commands are killed with their process group")
	e.Int(&cfg.HistoryLimit, "history-limit", 20, "prior messages of the context the agent is given, under the reference-only boundary (0 disables, at most 200)")
	e.Int(&cfg.HistoryTokens, "history-tokens", 8192, "the history budget in estimated tokens (4 bytes each): past it old tool output is compacted in place and the oldest turns dropped")
	e.Bool(&cfg.HistoryMemory, "history-memory", false, "keep a memory of the turns the history budget drops: facts with evidence (ledger entries), made by the chat backend or an extractive summariser, shown in their place (see README, Memory)")
	e.Int(&cfg.MemoryTokens, "memory-tokens", 512, "with --history-memory: the part of --history-tokens the memory takes (at most half)")
	e.Duration(&cfg.MemoryTimeout, "memory-timeout", 20*time.Second, "with --history-memory: the longest a chat backend's summary may take before the extractive summary stands in")
	e.String(&cfg.OperatorPolicy, "operator-policy", "", "operator instructions placed in the agent's instruction stack (below the platform policy, above the peer framing)")
	e.Duration(&cfg.EchoDelay, "echo-delay", 0, "pause between the echo agent's words, to watch streaming: with one (longer than a ledger commit, a few ms) each word streams as its own chunk; at 0 the reply arrives at once, usually in one chunk (a stream carries one commit's text per chunk)")
	e.Level(&cfg.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn, error")
	e.String(&cfg.LogFormat, "log-format", "json", "log format: json or text")
	e.Duration(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long running turns may finish after SIGINT/SIGTERM before they are canceled; its last second (a tenth, when shorter) is kept for answering the requests waiting on them with their failed tasks")
	e.Bool(&cfg.InsecurePublic, "insecure-public", false, "allow a non-loopback --addr without peer authentication (anyone who can reach it can talk to the agent)")
	e.String(&cfg.PublicURL, "public-url", "", "endpoint URL published in the agent card; empty: the URL each request reached. Its host is served (see --allowed-hosts) and its origin may open GET /ws")
	e.String(&cfg.GRPCAddr, "grpc-addr", "", "address of the gRPC binding's listener (A2A v1.0 over gRPC, service lf.a2a.v1.A2AService, plaintext HTTP/2 like the HTTP listener; same peer tokens, limits and ledger as JSON-RPC); empty: gRPC is off. Without peer tokens only loopback addresses are allowed. The card lists it as a GRPC interface (see --grpc-public-addr)")
	e.String(&cfg.GRPCPublicAddr, "grpc-public-addr", "", "host:port the agent card publishes for gRPC; empty: the --public-url host with the --grpc-addr port, or without --public-url the host each card request reached with that port")
	e.String(&cfg.AllowedHosts, "allowed-hosts", "", "comma-separated Host names served besides localhost, IP addresses, the --addr host and the --public-url host (name or name:port); any other Host gets 421, which stops DNS rebinding; \"*\" serves any Host")
	e.Duration(&cfg.BodyTimeout, "body-timeout", 30*time.Second, "the longest reading one request body may take (0: no bound); a JSON-RPC request cut gets HTTP 408, any cut request's connection is closed")
	e.Int(&cfg.BodyMinRate, "body-min-rate", server.DefaultBodyMinRate, "least average rate, in bytes/s, at which a request body must arrive after its first 5 s (0: no bound); cut like --body-timeout")
	e.String(&cfg.RedisAddr, "redis-addr", "", "Redis host:port for the per-context lease across gateway instances (no password, db 0; see --redis-url); empty: the in-process lease (one instance)")
	e.String(&cfg.RedisURL, "redis-url", "", "Redis for the lease as a URL: redis://[user:password@]host[:port][/db], or rediss://… for TLS; instead of --redis-addr; prefer the env variable to the flag, which other users can see in ps; the password is never logged")
	e.String(&cfg.RedisKeyPrefix, "redis-key-prefix", locking.DefaultKeyPrefix, "prefix of the lease keys in Redis, so that several gateways (or other programs) can share one database; instances that share a lease must use the same (empty: the default)")
	e.Duration(&cfg.LeaseTTL, "lease-ttl", 30*time.Second, "lease time-to-live; the holder renews (and so checks) it every min(ttl/3, 500ms)")
	e.String(&cfg.BusyPolicy, "busy-policy", "reject", "a send to a context whose task is still running: reject (-32004 CONTEXT_BUSY at once) or wait (up to --busy-wait, then CONTEXT_BUSY)")
	e.Duration(&cfg.BusyWait, "busy-wait", 5*time.Second, "with --busy-policy wait: how long a send waits for the running task of its context")
	e.String(&cfg.WSAllowedOrigins, "ws-allowed-origins", "", "comma-separated browser Origins allowed to open GET /ws (e.g. https://app.example), \"*\" for any; requests without an Origin header (agents, CLIs), the --public-url origin and, on a loopback --addr, http://localhost:PORT, http://127.0.0.1:PORT and http://[::1]:PORT are always allowed; the request's Host is never trusted for this")
	e.String(&cfg.AdminToken, "admin-token", "", "bearer token for the operator API under /admin/v1/ and for /metrics; empty: loopback clients may read, and writes need the random token written to <data-dir>/admin.token (set it behind a reverse proxy: every client it forwards is loopback)")
	e.String(&cfg.RateLimit, "rate-limit", "600/m", "requests each peer may make: N/s, N/m or N/h, a token bucket per peer whose burst is N (a quiet peer may send N at once); beyond it -32000 RATE_LIMITED with a retry hint; 0 turns it off")
	e.Int(&cfg.MaxParts, "max-parts", 64, "most parts in one message (0: no limit); more is -32602 invalid params and nothing is stored")
	e.Int(&cfg.MaxPartBytes, "max-part-bytes", 256<<10, "most bytes of one part's content (text, data or file bytes; 0: no limit); more is -32602 invalid params and nothing is stored")
	e.Int(&cfg.MaxMessageBytes, "max-message-bytes", 960<<10, "most bytes of all of a message's parts together (0: no limit; the request body is capped at 1 MiB regardless); more is -32602 invalid params and nothing is stored")
	e.Int(&cfg.MaxStreamsPerPeer, "max-streams-per-peer", 32, "most streams (SSE and WebSocket subscriptions) one peer may have open at once (0: no limit); beyond it RATE_LIMITED")
	e.Int(&cfg.MaxWSConnsPerPeer, "max-ws-conns-per-peer", 16, "most WebSocket connections one peer may hold open at once (0: no limit); beyond it GET /ws answers 429")
	bindPush(e, cfg)
	return e
}

// configPath finds the config file: --config in args, else GATEWAY_CONFIG, else
// ./gateway.yaml when it exists. explicit reports whether it was asked for (then it must
// exist).
func configPath(args []string, lookup func(string) (string, bool)) (path string, explicit bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, p := range []string{"--config", "-config"} {
			if a == p && i+1 < len(args) {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v, true
			}
		}
	}
	if v, ok := lookup("GATEWAY_CONFIG"); ok && v != "" {
		return v, true
	}
	if _, err := os.Stat("gateway.yaml"); err == nil {
		return "gateway.yaml", false
	}
	return "", false
}

// loadConfigFile reads a YAML mapping of flag names to scalar values. Keys that are not
// flags of fs are errors, so a typo never passes silently.
func loadConfigFile(path string, fs *flag.FlagSet) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	var errs []error
	for k, v := range raw {
		if k == "peers" {
			continue // read by loadPeersFile
		}
		if fs.Lookup(k) == nil || k == "config" {
			errs = append(errs, fmt.Errorf("config file %s: unknown key %q (keys are the flag names of 'gateway serve --help')", path, k))
			continue
		}
		switch v.(type) {
		case map[string]any, []any:
			errs = append(errs, fmt.Errorf("config file %s: key %q must be a single value", path, k))
			continue
		case nil:
			continue
		}
		out[k] = fmt.Sprint(v)
	}
	return out, errors.Join(errs...)
}

// printFlags lists fs's flags GNU-style (--name), with their defaults.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(w, " %s", name)
		}
		fmt.Fprintf(w, "\n        %s", strings.ReplaceAll(usage, "\n", "\n        "))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// bindPush defines the push-notification flags (part of bindServe).
func bindPush(e *envFlags, cfg *server.Config) {
	e.Bool(&cfg.Push, "push", true, "A2A push notifications: peers may register webhooks for their tasks, and the gateway posts each task update to them, signed, retried for --push-retry-for, resumed after a restart. On by default; with --store postgres it also needs --push-signing-key (without one push stays off, as the start-up log says)")
	e.List(&cfg.PushAllow, "push-allow", "a `CIDR` (10.1.2.0/24), an address or a host name that webhooks may reach although it is loopback, private, link-local, CGNAT, multicast or otherwise not public (the SSRF guard refuses those); repeat the flag or separate with commas")
	e.Bool(&cfg.PushAllowHTTP, "push-allow-http", false, "allow http:// webhooks (default: https only)")
	e.Duration(&cfg.PushRetryFor, "push-retry-for", 24*time.Hour, "how long a push notification is retried (exponential backoff from 1s to 5m, with jitter) before it is given up")
	e.String(&cfg.PushSigningKey, "push-signing-key", "", "PEM `FILE` of the Ed25519 key that signs push notifications (openssl genpkey -algorithm ed25519 -out FILE); its public key is served at GET /.well-known/jwks.json. Default <data-dir>/push-signing.key, created (mode 0600) if missing; required with --store postgres, so that every instance signs with the same key")
}

// List binds a repeatable flag whose values may also be comma-separated; its default
// comes from the GATEWAY_* variable or the config file (comma-separated), and the
// command line, when it gives the flag, replaces that default.
func (e *envFlags) List(p *[]string, name, usage string) {
	if v, ok := e.env(name); ok {
		*p = splitList(v)
	}
	e.fs.Var(&listFlag{p: p}, name, usage+" (env "+envName(name)+", comma-separated)")
}

// listFlag is a repeatable flag.Value; its first Set replaces the default.
type listFlag struct {
	p   *[]string
	set bool
}

func (f *listFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return strings.Join(*f.p, ",")
}

func (f *listFlag) Set(s string) error {
	if !f.set {
		*f.p, f.set = nil, true
	}
	*f.p = append(*f.p, splitList(s)...)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
