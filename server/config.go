package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/projection"
)

// Config is everything `gateway serve` reads. Precedence: flag > GATEWAY_* env > default.
type Config struct {
	Addr    string
	DataDir string
	// Store is a PostgreSQL URL (postgres://…) holding the ledger that several instances
	// share; empty: the bbolt ledger in DataDir. Its password is never logged.
	Store           string
	Agent           string
	EchoDelay       time.Duration
	LogLevel        slog.Level
	LogFormat       string
	ShutdownTimeout time.Duration
	InsecurePublic  bool
	PublicURL       string
	AdminToken      string
	BusyPolicy      string
	BusyWait        time.Duration
	RedisAddr       string
	// RedisURL is redis://[user:password@]host[:port][/db] or rediss:// (TLS); it
	// excludes RedisAddr. Its password is never logged.
	RedisURL       string
	RedisKeyPrefix string
	LeaseTTL       time.Duration

	AgentURL       string
	AgentModel     string
	AgentKeyEnv    string
	AgentCommand   string
	AgentInput     string
	AgentTimeout   time.Duration
	HistoryLimit   int
	OperatorPolicy string

	// AgentTools is --agent-tools: none, read or all; "" means all when peers are
	// configured (see toolMode). AgentMaxToolCalls bounds one turn's tool calls (0: the
	// agent's default, 8); AgentHopLimit bounds agent-to-agent hops (0: 4).
	AgentTools        string
	AgentMaxToolCalls int
	AgentHopLimit     int
	// AgentToolTime bounds the time a turn's model may spend calling tools (0: 2m).
	AgentToolTime time.Duration

	// Limits. RateLimit is a --rate-limit spec ("600/m"; "0" or "" = off); the Max*
	// fields are 0 for no limit. The zero values limit nothing; the flags' defaults do.
	RateLimit         string
	MaxParts          int
	MaxPartBytes      int
	MaxMessageBytes   int
	MaxStreamsPerPeer int
	MaxWSConnsPerPeer int

	// BodyTimeout bounds reading one request body, whatever its rate; 0: no bound.
	// BodyMinRate is the least average rate (bytes/s) at which a body must arrive after
	// httpguard.DefaultGrace; 0: no rate bound. See internal/httpguard.
	BodyTimeout time.Duration
	BodyMinRate int

	// AllowedHosts lists (comma-separated) the Host names served besides the loopback
	// names, the --addr host and the --public-url host; "*" serves any Host.
	AllowedHosts string

	// WSAllowedOrigins lists (comma-separated) the browser Origins allowed on GET /ws
	// besides the gateway's own (see wsAllowedOrigins); "*" allows any.
	WSAllowedOrigins string

	// Push notifications (issue #20; see push_config.go): Push turns them on; the rest
	// configure delivery.
	Push           bool
	PushAllow      []string // CIDRs, addresses or host names the SSRF guard allows
	PushAllowHTTP  bool
	PushRetryFor   time.Duration   // 0: 24h
	PushSigningKey string          // "": <data-dir>/push-signing.key (bbolt only)
	pushTest       pushTestOptions // tests only, never a flag (push_wiring.go)

	// AgentKey is the API key read from the variable AgentKeyEnv names (never a flag).
	AgentKey string
	// Peers come from the config file's `peers:` list (never flags), tokens resolved.
	Peers []Peer
}

// LogValue implements slog.LogValuer; secrets are never logged, only whether they are set.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", c.Addr), slog.String("data_dir", c.DataDir), slog.String("store", redactURL(c.Store)), slog.String("agent", c.Agent),
		slog.String("echo_delay", c.EchoDelay.String()), slog.String("log_level", c.LogLevel.String()),
		slog.Bool("admin_token_set", c.AdminToken != ""), slog.String("busy_policy", c.BusyPolicy),
		slog.String("redis_addr", c.RedisAddr), slog.String("redis_url", redactURL(c.RedisURL)),
		slog.String("redis_key_prefix", c.RedisKeyPrefix), slog.String("lease_ttl", c.LeaseTTL.String()),
		slog.String("agent_model", c.AgentModel), slog.Bool("agent_key_set", c.AgentKey != ""),
		slog.Int("history_limit", c.HistoryLimit), slog.Int("peers", len(c.Peers)),
		slog.Bool("peer_auth", c.peerAuthConfigured()), slog.String("rate_limit", c.RateLimit),
		slog.Int("max_parts", c.MaxParts), slog.Int("max_part_bytes", c.MaxPartBytes),
		slog.Int("max_message_bytes", c.MaxMessageBytes), slog.Int("max_streams_per_peer", c.MaxStreamsPerPeer),
		slog.String("body_timeout", c.BodyTimeout.String()), slog.Int("body_min_rate", c.BodyMinRate),
		slog.String("allowed_hosts", c.AllowedHosts), slog.String("public_url", c.PublicURL),
		slog.Bool("push", c.Push), slog.Any("push_allow", c.PushAllow), slog.Bool("push_allow_http", c.PushAllowHTTP),
		slog.String("push_retry_for", c.PushRetryFor.String()), slog.String("push_signing_key", c.PushSigningKey),
	)
}

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
func bindServe(fs *flag.FlagSet, lookup func(string) (string, bool), file map[string]string, cfg *Config) *envFlags {
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
	e.String(&cfg.OperatorPolicy, "operator-policy", "", "operator instructions placed in the agent's instruction stack (below the platform policy, above the peer framing)")
	e.Duration(&cfg.EchoDelay, "echo-delay", 0, "pause between the echo agent's words, to watch streaming: with one (longer than a ledger commit, a few ms) each word streams as its own chunk; at 0 the reply arrives at once, usually in one chunk (a stream carries one commit's text per chunk)")
	e.Level(&cfg.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn, error")
	e.String(&cfg.LogFormat, "log-format", "json", "log format: json or text")
	e.Duration(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long running turns may finish after SIGINT/SIGTERM before they are canceled; its last second (a tenth, when shorter) is kept for answering the requests waiting on them with their failed tasks")
	e.Bool(&cfg.InsecurePublic, "insecure-public", false, "allow a non-loopback --addr without peer authentication (anyone who can reach it can talk to the agent)")
	e.String(&cfg.PublicURL, "public-url", "", "endpoint URL published in the agent card; empty: the URL each request reached. Its host is served (see --allowed-hosts) and its origin may open GET /ws")
	e.String(&cfg.AllowedHosts, "allowed-hosts", "", "comma-separated Host names served besides localhost, IP addresses, the --addr host and the --public-url host (name or name:port); any other Host gets 421, which stops DNS rebinding; \"*\" serves any Host")
	e.Duration(&cfg.BodyTimeout, "body-timeout", 30*time.Second, "the longest reading one request body may take (0: no bound); a JSON-RPC request cut gets HTTP 408, any cut request's connection is closed")
	e.Int(&cfg.BodyMinRate, "body-min-rate", defaultBodyMinRate, "least average rate, in bytes/s, at which a request body must arrive after its first 5 s (0: no bound); cut like --body-timeout")
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

// Validate reports every problem with c.
func (c *Config) Validate() error {
	var errs []error
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		errs = append(errs, fmt.Errorf("--addr %q: want host:port, e.g. 127.0.0.1:9900", c.Addr))
	} else if !c.InsecurePublic && !c.peerAuthConfigured() && !isLoopbackHost(host) {
		errs = append(errs, fmt.Errorf("--addr %q is not a loopback address and no peer tokens are configured (no peer in the config file's peers: list has accept-tokens or accept-token-envs): anyone who can reach it could talk to the agent, and every caller would be the same peer; configure peer tokens, listen on 127.0.0.1, or pass --insecure-public", c.Addr))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if c.Store != "" && !isStoreURL(c.Store) {
		errs = append(errs, errors.New("--store: want a postgres://… or postgresql://… URL (empty: the bbolt ledger in --data-dir)"))
	}
	errs = append(errs, c.agentProblems()...)
	errs = append(errs, c.toolProblems()...)
	if c.AgentTimeout <= 0 {
		errs = append(errs, errors.New("--agent-timeout must be positive"))
	}
	if c.HistoryLimit < 0 || c.HistoryLimit > 200 {
		errs = append(errs, fmt.Errorf("--history-limit %d: want 0 (disabled) to 200", c.HistoryLimit))
	}
	if c.EchoDelay < 0 {
		errs = append(errs, errors.New("--echo-delay must not be negative"))
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("--log-format %q: want json or text", c.LogFormat))
	}
	if c.LeaseTTL < 100*time.Millisecond {
		errs = append(errs, errors.New("--lease-ttl must be at least 100ms"))
	}
	errs = append(errs, c.redisProblems()...)
	if c.BusyPolicy != "reject" && c.BusyPolicy != "wait" {
		errs = append(errs, fmt.Errorf("--busy-policy %q: want reject or wait", c.BusyPolicy))
	}
	if c.BusyPolicy == "wait" && c.BusyWait <= 0 {
		errs = append(errs, errors.New("--busy-wait must be positive with --busy-policy wait"))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("--shutdown-timeout must be positive"))
	}
	errs = append(errs, c.guardProblems()...)
	errs = append(errs, c.pushProblems()...)
	if _, err := parseRate(c.RateLimit); err != nil {
		errs = append(errs, err)
	}
	for _, l := range []struct {
		name string
		v    int
	}{{"max-parts", c.MaxParts}, {"max-part-bytes", c.MaxPartBytes}, {"max-message-bytes", c.MaxMessageBytes}, {"max-streams-per-peer", c.MaxStreamsPerPeer}, {"max-ws-conns-per-peer", c.MaxWSConnsPerPeer}, {"body-min-rate", c.BodyMinRate}} {
		if l.v < 0 {
			errs = append(errs, fmt.Errorf("--%s %d: want 0 (no limit) or more", l.name, l.v))
		}
	}
	return errors.Join(errs...)
}

// guardProblems reports bad settings of the listener's guards (part of Validate;
// --body-min-rate is checked with the other limits).
func (c *Config) guardProblems() []error {
	var errs []error
	if c.BodyTimeout < 0 {
		errs = append(errs, errors.New("--body-timeout must not be negative (0: no bound)"))
	}
	if _, err := c.allowedHosts(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// redisProblems reports bad Redis settings (part of Validate).
func (c *Config) redisProblems() []error {
	var errs []error
	switch {
	case c.RedisAddr != "" && c.RedisURL != "":
		errs = append(errs, errors.New("--redis-addr and --redis-url exclude each other: give the URL alone (redis://[user:password@]host[:port][/db])"))
	case c.RedisAddr != "":
		if _, _, err := net.SplitHostPort(c.RedisAddr); err != nil {
			errs = append(errs, fmt.Errorf("--redis-addr %q: want host:port (or --redis-url for a password, db or TLS)", c.RedisAddr))
		}
	case c.RedisURL != "":
		if _, err := locking.ParseURL(c.RedisURL); err != nil {
			errs = append(errs, fmt.Errorf("--redis-url %s: %w", redactURL(c.RedisURL), err))
		}
	}
	return errs
}

// redisConfig returns the Redis lease's configuration, and false for the in-process
// lease. Validate has checked --redis-url.
func (c *Config) redisConfig() (locking.RedisConfig, bool) {
	var rc locking.RedisConfig
	switch {
	case c.RedisURL != "":
		rc, _ = locking.ParseURL(c.RedisURL)
	case c.RedisAddr != "":
		rc.Addr = c.RedisAddr
	default:
		return rc, false
	}
	rc.KeyPrefix, rc.TTL = c.RedisKeyPrefix, c.LeaseTTL // "" prefix: locking's default
	return rc, true
}

// redactURL returns raw with its password replaced by "xxxxx" ("" stays ""), for logs and
// errors; what is not a URL becomes "(not a URL)", since it may hold a password.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(not a URL)"
	}
	return u.Redacted()
}

// agentProblems reports what the chosen agent backend misses (part of Validate).
func (c *Config) agentProblems() []error {
	var errs []error
	switch c.Agent {
	case "echo", "tck":
	case "openai", "anthropic":
		if c.AgentModel == "" {
			errs = append(errs, fmt.Errorf("--agent %s needs --agent-model", c.Agent))
		}
		if c.AgentKey == "" && c.hostedAgent() {
			errs = append(errs, fmt.Errorf("--agent %s: no API key: set the environment variable %s (or name another with --agent-key-env); only a custom --agent-url (a local OpenAI-compatible server) may run without a key", c.Agent, c.agentKeyEnv()))
		}
	case "a2a":
		if c.AgentURL == "" {
			errs = append(errs, errors.New("--agent a2a needs --agent-url (the upstream A2A agent)"))
		}
	case "exec":
		if c.AgentCommand == "" {
			errs = append(errs, errors.New("--agent exec needs --agent-command"))
		}
		if c.AgentInput != "text" && c.AgentInput != "json" {
			errs = append(errs, fmt.Errorf("--agent-input %q: want text or json", c.AgentInput))
		}
	default:
		errs = append(errs, fmt.Errorf("--agent %q: unknown backend; available: echo, openai, anthropic, exec, a2a, tck", c.Agent))
	}
	return errs
}

// peerAuthConfigured reports whether any peer has an inbound (accept) token, which turns
// peer authentication on for the A2A routes.
func (c *Config) peerAuthConfigured() bool {
	for _, p := range c.Peers {
		if len(p.Accept) > 0 {
			return true
		}
	}
	return false
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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

// wsOrigins splits --ws-allowed-origins.
func (c *Config) wsOrigins() []string {
	var out []string
	for _, o := range strings.Split(c.WSAllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// hostedAgent reports whether the openai/anthropic backend talks to the provider's
// public API (no --agent-url, or one on the provider's API host), which needs a key.
func (c *Config) hostedAgent() bool {
	if c.AgentURL == "" {
		return true
	}
	def := agent.DefaultOpenAIURL
	if c.Agent == "anthropic" {
		def = agent.DefaultAnthropicURL
	}
	u, err := url.Parse(c.AgentURL)
	d, derr := url.Parse(def)
	return err == nil && derr == nil && strings.EqualFold(u.Hostname(), d.Hostname())
}

// agentKeyEnv returns the variable that holds the agent's API key.
func (c *Config) agentKeyEnv() string {
	switch {
	case c.AgentKeyEnv != "":
		return c.AgentKeyEnv
	case c.Agent == "anthropic":
		return "ANTHROPIC_API_KEY"
	default:
		return "OPENAI_API_KEY"
	}
}

// policy is the projection policy the configuration gives the agent.
func (c *Config) policy() projection.Policy {
	return projection.Policy{HistoryLimit: c.HistoryLimit, Operator: c.OperatorPolicy}
}

// defaultBodyMinRate is --body-min-rate's default, in bytes per second.
const defaultBodyMinRate = 1024
