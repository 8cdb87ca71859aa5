package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/peers"
	"github.com/a2a-gateway/gateway/projection"
	"go.opentelemetry.io/otel/trace"
)

// Config is everything a gateway server runs with: plain values, no flags (cmd/gateway
// fills it from its flags, GATEWAY_* variables and config file, whose defaults are not
// the zero values). Each field says what its zero value means; "required" fields make
// [Config.Validate] (and so [Open]) fail at their zero value. Validate's messages name
// the flags of `gateway serve`.
type Config struct {
	// Addr is the host:port to listen on ("127.0.0.1:0": a free port); required. Without
	// peer tokens it must be a loopback address unless InsecurePublic.
	Addr string
	// DataDir holds the bbolt ledger (ledger.db), admin.token and the push signing key;
	// required (with Store too, for admin.token). Created if missing.
	DataDir string
	// Store is a PostgreSQL URL (postgres://…) holding the ledger that several instances
	// share; empty: the bbolt ledger in DataDir. Its password is never logged.
	Store string
	// Agent is the reply backend: echo, openai, anthropic, exec, a2a or tck; required.
	Agent string
	// EchoDelay is the echo agent's pause between words; 0: none.
	EchoDelay time.Duration
	// LogLevel and LogFormat (json or text; required) are for the caller that builds the
	// logger given to Open (`gateway serve`); the server only validates and logs them.
	LogLevel  slog.Level
	LogFormat string
	// TracerProvider makes the spans of requests, turns and outbound calls (cmd/gateway
	// builds it from the OTEL_* variables with internal/telemetry); nil: no spans, a
	// caller's traceparent still passes through to the calls a request makes.
	TracerProvider trace.TracerProvider
	// ShutdownTimeout bounds Serve's close (running turns finish until then); required.
	ShutdownTimeout time.Duration
	// InsecurePublic allows a non-loopback Addr without peer tokens; false: refused.
	InsecurePublic bool
	// PublicURL is the endpoint URL the agent card publishes (its host is served, its
	// origin may open GET /ws); "": the URL each request reached.
	PublicURL string
	// GRPCAddr is the host:port of the gRPC binding's listener (A2A v1.0 over gRPC, package
	// grpcapi); "": gRPC is off. The loopback rule of Addr applies to it too.
	GRPCAddr string
	// GRPCPublicAddr is the host:port the agent card publishes for gRPC (its GRPC entry of
	// supportedInterfaces); "": PublicURL's host with GRPCAddr's port, or without
	// PublicURL the host each card request reached with GRPCAddr's port.
	GRPCPublicAddr string
	// AdminToken is the bearer token of /admin/v1, /metrics and /debug/pprof; "": loopback
	// clients may read, and writes need the random token written to DataDir/admin.token.
	AdminToken string
	// BusyPolicy is reject (-32004 CONTEXT_BUSY at once) or wait (up to BusyWait, which
	// must then be positive); required.
	BusyPolicy string
	BusyWait   time.Duration
	// RedisAddr (host:port) or RedisURL (redis://[user:password@]host[:port][/db], or
	// rediss:// for TLS; they exclude each other) is the Redis holding the leases; both
	// empty: the in-process lease (one instance). The URL's password is never logged.
	RedisAddr string
	RedisURL  string
	// RedisKeyPrefix prefixes the lease keys; "": locking.DefaultKeyPrefix.
	RedisKeyPrefix string
	// LeaseTTL is the lease's time to live; required, at least 100ms.
	LeaseTTL time.Duration

	// AgentURL is the openai/anthropic API base ("": the provider's) or the a2a
	// upstream (required for a2a); AgentModel the model (required for openai/anthropic).
	AgentURL   string
	AgentModel string
	// AgentKeyEnv names the variable AgentKey was read from, for messages; "": see
	// [Config.AgentKeyVariable].
	AgentKeyEnv string
	// AgentCommand is the exec agent's command (required for exec); AgentInput what it
	// reads on stdin: text or json (required for exec).
	AgentCommand string
	AgentInput   string
	// AgentTimeout bounds one agent reply; required.
	AgentTimeout time.Duration
	// HistoryLimit is how many prior messages the agent is given (0: none; at most 200).
	HistoryLimit int
	// HistoryTokens is the history budget in estimated tokens (0: the projection's
	// default, 8192).
	HistoryTokens int
	// HistoryMemory turns on the memory of dropped turns (issue #38): snapshots of the
	// turns the history budget drops, shown in their place. MemoryTokens is the part of
	// the history budget they take (0: 512); MemoryTimeout bounds a chat backend's
	// summary (0: 20s).
	HistoryMemory bool
	MemoryTokens  int
	MemoryTimeout time.Duration
	// OperatorPolicy is the operator's instructions to the agent; "": none.
	OperatorPolicy string

	// AgentTools is --agent-tools: none, read or all; "" means all when peers are
	// configured (see toolMode). AgentMaxToolCalls bounds one turn's tool calls (0: the
	// agent's default, 8); AgentHopLimit bounds agent-to-agent hops (0: 4).
	AgentTools        string
	AgentMaxToolCalls int
	AgentHopLimit     int
	// AgentToolTime bounds the time a turn's model may spend calling tools (0: 2m).
	AgentToolTime time.Duration

	// Limits. RateLimit is a --rate-limit spec ("600/m"; "0" or "": off); the Max*
	// fields are 0 for no limit (MaxWSConnsPerPeer included). The zero values limit
	// nothing; the flags' defaults do.
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
	// names, the --addr host and the --public-url host ("": those only); "*" serves any
	// Host.
	AllowedHosts string

	// WSAllowedOrigins lists (comma-separated) the browser Origins allowed on GET /ws
	// besides the gateway's own (see wsAllowedOrigins; "": those only); "*" allows any.
	WSAllowedOrigins string

	// Push notifications (issue #20; see push_config.go): Push turns them on (false:
	// off); the rest configure delivery. PushAllow nil: no private address is allowed;
	// PushAllowHTTP false: https:// webhooks only.
	Push           bool
	PushAllow      []string // CIDRs, addresses or host names the SSRF guard allows
	PushAllowHTTP  bool
	PushRetryFor   time.Duration   // 0: 24h
	PushSigningKey string          // "": <data-dir>/push-signing.key (bbolt only)
	pushTest       pushTestOptions // tests only, never a flag (push_wiring.go)

	// AgentKey is the agent's API key, which the caller reads from the variable
	// AgentKeyVariable names (never a flag); "": none (refused against a provider's
	// public API).
	AgentKey string
	// Peers come from the config file's `peers:` list (never flags), tokens resolved; nil:
	// no peer authentication, every caller is the peer "local" (loopback Addr only).
	Peers []Peer
}

// Peer is a configured peer: its name, the tokens it is accepted with (Accept) and
// where the gateway reaches it.
type Peer = peers.Peer

// LogValue implements slog.LogValuer; secrets are never logged, only whether they are set.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", c.Addr), slog.String("data_dir", c.DataDir), slog.String("store", RedactURL(c.Store)), slog.String("agent", c.Agent),
		slog.String("echo_delay", c.EchoDelay.String()), slog.String("log_level", c.LogLevel.String()),
		slog.Bool("admin_token_set", c.AdminToken != ""), slog.String("busy_policy", c.BusyPolicy),
		slog.String("redis_addr", c.RedisAddr), slog.String("redis_url", RedactURL(c.RedisURL)),
		slog.String("redis_key_prefix", c.RedisKeyPrefix), slog.String("lease_ttl", c.LeaseTTL.String()),
		slog.String("agent_model", c.AgentModel), slog.Bool("agent_key_set", c.AgentKey != ""),
		slog.Int("history_limit", c.HistoryLimit), slog.Int("peers", len(c.Peers)),
		slog.Bool("peer_auth", c.peerAuthConfigured()), slog.String("rate_limit", c.RateLimit),
		slog.Int("max_parts", c.MaxParts), slog.Int("max_part_bytes", c.MaxPartBytes),
		slog.Int("max_message_bytes", c.MaxMessageBytes), slog.Int("max_streams_per_peer", c.MaxStreamsPerPeer),
		slog.String("body_timeout", c.BodyTimeout.String()), slog.Int("body_min_rate", c.BodyMinRate),
		slog.String("allowed_hosts", c.AllowedHosts), slog.String("public_url", c.PublicURL),
		slog.String("grpc_addr", c.GRPCAddr), slog.String("grpc_public_addr", c.GRPCPublicAddr),
		slog.Bool("push", c.Push), slog.Any("push_allow", c.PushAllow), slog.Bool("push_allow_http", c.PushAllowHTTP),
		slog.String("push_retry_for", c.PushRetryFor.String()), slog.String("push_signing_key", c.PushSigningKey),
	)
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
	errs = append(errs, c.validateGRPC()...)
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if c.Store != "" && !IsStoreURL(c.Store) {
		errs = append(errs, errors.New("--store: want a postgres://… or postgresql://… URL (empty: the bbolt ledger in --data-dir)"))
	}
	errs = append(errs, c.agentProblems()...)
	errs = append(errs, c.toolProblems()...)
	if c.AgentTimeout <= 0 {
		errs = append(errs, errors.New("--agent-timeout must be positive"))
	}
	if c.HistoryTokens < 0 || c.MemoryTokens < 0 {
		errs = append(errs, fmt.Errorf("--history-tokens %d, --memory-tokens %d: want 0 (default) or more", c.HistoryTokens, c.MemoryTokens))
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
			errs = append(errs, fmt.Errorf("--redis-url %s: %w", RedactURL(c.RedisURL), err))
		}
	}
	return errs
}

// RedisConfig returns the Redis lease's configuration, and false for the in-process
// lease. Validate has checked --redis-url.
func (c *Config) RedisConfig() (locking.RedisConfig, bool) {
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

// RedactURL returns raw with its password replaced by "xxxxx" ("" stays ""), for logs and
// errors; what is not a URL becomes "(not a URL)", since it may hold a password.
func RedactURL(raw string) string {
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
			errs = append(errs, fmt.Errorf("--agent %s: no API key: set the environment variable %s (or name another with --agent-key-env); only a custom --agent-url (a local OpenAI-compatible server) may run without a key", c.Agent, c.AgentKeyVariable()))
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

// AgentKeyVariable returns the name of the environment variable that holds the agent's
// API key: AgentKeyEnv, or by default OPENAI_API_KEY (ANTHROPIC_API_KEY for anthropic).
// The key itself is AgentKey: the caller reads it.
func (c *Config) AgentKeyVariable() string {
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
	return projection.Policy{HistoryLimit: c.HistoryLimit, Operator: c.OperatorPolicy, Memory: c.HistoryMemory,
		Budget: projection.Budget{History: c.HistoryTokens, Memory: c.MemoryTokens}}
}

// DefaultBodyMinRate is the least body rate (bytes/s) `gateway serve` asks by default
// (--body-min-rate); see Config.BodyMinRate.
const DefaultBodyMinRate = 1024

// validateGRPC checks the gRPC listener's address (the loopback rule of Addr) and the
// address the card publishes for it.
func (c *Config) validateGRPC() []error {
	var errs []error
	if c.GRPCAddr != "" {
		host, _, err := net.SplitHostPort(c.GRPCAddr)
		if err != nil {
			errs = append(errs, fmt.Errorf("--grpc-addr %q: want host:port, e.g. 127.0.0.1:9901", c.GRPCAddr))
		} else if !c.InsecurePublic && !c.peerAuthConfigured() && !isLoopbackHost(host) {
			errs = append(errs, fmt.Errorf("--grpc-addr %q is not a loopback address and no peer tokens are configured: configure peer tokens, listen on 127.0.0.1, or pass --insecure-public", c.GRPCAddr))
		}
	}
	if c.GRPCPublicAddr != "" {
		if c.GRPCAddr == "" {
			errs = append(errs, errors.New("--grpc-public-addr needs --grpc-addr (gRPC is off without it)"))
		}
		if _, port, err := net.SplitHostPort(c.GRPCPublicAddr); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("--grpc-public-addr %q: want host:port as the card publishes it, e.g. agent.example.com:443", c.GRPCPublicAddr))
		}
	}
	return errs
}
