package loadgen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"
)

// Dialect selects the A2A wire format of the requests.
type Dialect string

// The two dialects the gateway speaks.
const (
	// DialectV03 sends message/send and message/stream with v0.3 "kind"
	// discriminators and no A2A-Version header.
	DialectV03 Dialect = "0.3"
	// DialectV10 sends SendMessage and SendStreamingMessage with ProtoJSON
	// enums and the header "A2A-Version: 1.0".
	DialectV10 Dialect = "1.0"
)

// Defaults for zero-valued settings of [Run] and [Compare].
const (
	// DefaultDuration is the measurement window when [Config.Duration] is zero.
	DefaultDuration = 10 * time.Second
	// DefaultTimeout is the per-request bound when [Config.Timeout] is zero.
	DefaultTimeout = 10 * time.Second
	// DefaultRounds is the number of rounds [Compare] runs when asked for
	// zero or fewer.
	DefaultRounds = 3
)

// DefaultMessage is the 1 KiB text sent when [Config.Message] is empty. The
// request body that carries it is about the size of the body used for the
// reference measurements (1,049 bytes).
const DefaultMessage = benchSentence + benchSentence + benchSentence + benchSentence +
	benchSentence + benchSentence + benchSentence + benchSentence +
	benchSentence + benchSentence + benchSentence + benchSentence +
	benchSentence + benchSentence + benchSentence + benchSentence

// benchSentence is 64 bytes long.
const benchSentence = "The quick brown fox jumps over the lazy dog; a bench echoes it. "

// Config describes one load run. The zero value of every field except URL is
// usable and means the default documented on the field.
type Config struct {
	// URL is the JSON-RPC endpoint that requests are POSTed to. Required;
	// the scheme must be http or https.
	URL string
	// Concurrency is the number of workers, each with at most one request in
	// flight. Zero means 1.
	Concurrency int
	// Duration is the length of the measurement window. Zero means
	// [DefaultDuration].
	Duration time.Duration
	// Warmup is run before the measurement window; requests that complete
	// during it are not counted. Zero means no warmup.
	Warmup time.Duration
	// Dialect selects the wire format. Empty means [DialectV03].
	Dialect Dialect
	// HTTPJSON sends SendMessage over the HTTP+JSON binding instead of JSON-RPC:
	// POST <URL>message:send with the SendMessageRequest as the body (v1.0 only:
	// Dialect must be empty or [DialectV10]; not with Stream); a 200 answer with a
	// task or a message counts as a success, any other status as "http <status>".
	HTTPJSON bool
	// Stream sends the streaming method and reads the SSE answer until its
	// terminal event (or until the stream ends), recording the time to the
	// first event as well.
	Stream bool
	// Contexts is the number of distinct contextIds the requests are spread
	// over. When Contexts >= Concurrency each worker cycles through its own
	// disjoint subset, so no two in-flight requests share a contextId. When
	// it is smaller, workers share ids; 1 makes every request use one
	// contextId. Zero means Concurrency. Ignored with FreshContexts.
	Contexts int
	// FreshContexts gives every request a contextId of its own
	// ("bench-<RunID>-n<request id>"), so every request opens a new
	// conversation instead of continuing one of Contexts.
	FreshContexts bool
	// Message is the text of every request. Empty means [DefaultMessage].
	Message string
	// Token, when set, is sent as "Authorization: Bearer <Token>".
	Token string
	// Timeout bounds each request, including reading its whole answer. Zero
	// means [DefaultTimeout].
	Timeout time.Duration
	// Send, when set, sends every request instead of the JSON-RPC POST to URL:
	// another binding (gateway bench --binding grpc), driven by the same closed
	// loop, contextIds and messageIds. It returns "" for success, else the key
	// the failure is counted under in the report. Not with Stream. URL is then
	// only where the target was found (its card).
	Send func(ctx context.Context, contextID, messageID, text string) (errKey string)
	// RunID is embedded in the contextIds ("bench-<RunID>-<i>") and
	// messageIds. Empty means a random 8-hex-digit id per run, so separate
	// runs never share a context.
	RunID string
}

// Validate reports every problem with c, each wrapping [ErrInvalidConfig],
// joined with [errors.Join]. It returns nil for a config [Run] accepts.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format+": %w", append(args, ErrInvalidConfig)...))
	}
	if c.URL == "" {
		bad("no URL")
	} else if u, err := url.Parse(c.URL); err != nil {
		bad("URL %q does not parse", c.URL)
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("URL %q is not an http:// or https:// URL", c.URL)
	}
	if c.Concurrency < 0 {
		bad("concurrency %d is negative", c.Concurrency)
	}
	if c.Duration < 0 {
		bad("duration %v is negative", c.Duration)
	}
	if c.Warmup < 0 {
		bad("warmup %v is negative", c.Warmup)
	}
	if c.Dialect != "" && c.Dialect != DialectV03 && c.Dialect != DialectV10 {
		bad("dialect %q is neither %q nor %q", c.Dialect, DialectV03, DialectV10)
	}
	if c.HTTPJSON && (c.Dialect == DialectV03 || c.Stream) {
		bad("the HTTP+JSON binding is v1.0 SendMessage only (not dialect 0.3, not streaming)")
	}
	if c.Contexts < 0 {
		bad("contexts %d is negative", c.Contexts)
	}
	if c.Send != nil && c.Stream {
		bad("streaming is JSON-RPC's only: Send sends SendMessage")
	}
	if c.Timeout < 0 {
		bad("timeout %v is negative", c.Timeout)
	}
	for _, r := range c.RunID {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			bad("run id %q has characters other than letters, digits, '-' and '_'", c.RunID)
			break
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Dialect == "" {
		c.Dialect = DialectV03
		if c.HTTPJSON {
			c.Dialect = DialectV10
		}
	}
	if c.Contexts == 0 {
		c.Contexts = c.Concurrency
	}
	if c.Message == "" {
		c.Message = DefaultMessage
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// LogValue implements [slog.LogValuer]. It leaves out the message text and
// reports only whether a token is set.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("url", c.URL),
		slog.Int("concurrency", c.Concurrency),
		slog.Duration("duration", c.Duration),
		slog.Duration("warmup", c.Warmup),
		slog.String("dialect", string(c.Dialect)),
		slog.Bool("http_json", c.HTTPJSON),
		slog.Bool("stream", c.Stream),
		slog.Int("contexts", c.Contexts),
		slog.Bool("fresh_contexts", c.FreshContexts),
		slog.Int("message_bytes", len(c.Message)),
		slog.Bool("token_set", c.Token != ""),
		slog.Duration("timeout", c.Timeout),
		slog.String("run_id", c.RunID),
	)
}
