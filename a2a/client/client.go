package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/netx"
	"github.com/a2a-gateway/gateway/internal/sse"
	"github.com/a2a-gateway/gateway/internal/tracing"
)

// DialectAuto makes a [Client] choose its dialect from the server's agent card.
const DialectAuto a2a.Dialect = -1

// DefaultTimeout bounds a non-streaming call when Options.Timeout is 0.
const DefaultTimeout = 60 * time.Second

const (
	maxResponseBytes = 32 << 20 // the largest JSON response (or SSE event) a Client reads
	maxCardBytes     = 1 << 20  // the largest agent card a Client reads
	maxErrorExcerpt  = 256      // how much of a non-JSON-RPC error body an error quotes
)

// ErrTransport is wrapped by every [Client] error that is not an answer from the server:
// the connection failed or broke, the HTTP status was not 200, the body was not a JSON-RPC
// response, or the result could not be decoded (then [a2a.ErrInvalidAgentResponse] is
// wrapped too). An answer the server gave as a JSON-RPC error is a [*RemoteError] instead.
var ErrTransport = errors.New("a2a transport failure")

// errStreamClosed is what Next returns after Close.
var errStreamClosed = fmt.Errorf("%w: stream closed", ErrTransport)

// RemoteError is a JSON-RPC error object a server answered with. errors.Is matches it
// against this package's sentinels through the error table, by code and ErrorInfo reason:
// -32001 is [a2a.ErrTaskNotFound]; -32004 with reason CONTEXT_BUSY is [a2a.ErrContextBusy] (and so
// [a2a.ErrUnsupportedOperation]); a code the table does not know matches no sentinel.
type RemoteError struct {
	Code    int
	Message string
	// Reason, Domain and Metadata come from the ErrorInfo in Data (v1.0: the detail whose
	// @type is google.rpc.ErrorInfo; v0.3: the data object); empty when absent.
	Reason   string
	Domain   string
	Metadata map[string]string
	Data     json.RawMessage // the error's data as sent; nil when absent

	sentinel error
}

// Error returns "remote error <code> [<reason>]: <message>", with control characters of
// the server's message replaced so that it prints safely on one line.
func (e *RemoteError) Error() string {
	msg := printable(truncate(e.Message, 512))
	if e.Reason != "" {
		return fmt.Sprintf("remote error %d %s: %s", e.Code, printable(truncate(e.Reason, 64)), msg)
	}
	return fmt.Sprintf("remote error %d: %s", e.Code, msg)
}

// Unwrap returns the sentinel the code and reason map to, or nil.
func (e *RemoteError) Unwrap() error { return e.sentinel }

// newRemoteError builds a RemoteError from an error object's fields.
func newRemoteError(code int, message string, data json.RawMessage) *RemoteError {
	e := &RemoteError{Code: code, Message: message}
	if len(data) > 0 && string(data) != "null" {
		e.Data = data
		e.Reason, e.Domain, e.Metadata = parseErrorInfo(data)
	}
	e.sentinel = a2a.SentinelFor(code, e.Reason)
	return e
}

// parseErrorInfo reads the ErrorInfo of an error's data: an array of typed details
// (v1.0) or an object (v0.3, free-form: the gateway puts reason, domain and metadata
// there). Anything unreadable yields empty values.
func parseErrorInfo(data json.RawMessage) (reason, domain string, md map[string]string) {
	type info struct {
		Type     string          `json:"@type"`
		Reason   string          `json:"reason"`
		Domain   string          `json:"domain"`
		Metadata json.RawMessage `json:"metadata"`
	}
	var pick *info
	switch data[0] {
	case '{':
		var i info
		if json.Unmarshal(data, &i) == nil {
			pick = &i
		}
	case '[':
		var details []json.RawMessage
		if json.Unmarshal(data, &details) != nil {
			return "", "", nil
		}
		for _, d := range details {
			var i info
			if json.Unmarshal(d, &i) != nil {
				continue
			}
			if strings.HasSuffix(i.Type, "google.rpc.ErrorInfo") {
				pick = &i
				break
			}
			if pick == nil && i.Reason != "" {
				pick = &i // a detail without @type, from a lenient server
			}
		}
	}
	if pick == nil {
		return "", "", nil
	}
	if len(pick.Metadata) > 0 {
		if json.Unmarshal(pick.Metadata, &md) != nil { // ErrorInfo metadata is string → string
			md = nil
		}
	}
	return pick.Reason, pick.Domain, md
}

// printable replaces control characters (newlines, escapes) with spaces.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// Options configure [New]. The zero value is usable: the V03 dialect, no
// token, a private HTTP client and a 60s timeout.
type Options struct {
	// HTTPClient sends the requests. nil: a client of the Client's own (released by
	// Close) that, unlike http.DefaultClient, never routes loopback, private or
	// link-local hosts through a proxy from the environment (HTTP_PROXY ...). A given
	// client's own Timeout, if set, also cuts streams short.
	HTTPClient *http.Client
	// Token is sent as "Authorization: Bearer <Token>" with every request, the agent card
	// fetch included. "": no Authorization header.
	Token string
	// Dialect is the wire dialect: V1, V03 (the zero value) or DialectAuto, which fetches
	// the agent card (CardPath under the base URL) once, before the first call: V1 if
	// supportedInterfaces lists a JSONRPC interface of protocol version 1.x (its url is the
	// endpoint), else V03 at the card's url (or a JSONRPC additionalInterfaces url). With V1
	// or V03, or a card that names no URL, the endpoint is the base URL itself.
	Dialect a2a.Dialect
	// Timeout bounds each non-streaming call and each agent card fetch, response body
	// included, and a streaming call until its response headers arrive; the stream itself
	// lasts until the ctx given to SendStreamingMessage is done or it is closed.
	// 0: DefaultTimeout.
	Timeout time.Duration
	// TracerProvider makes a client span of every call (named by its method; a stream's
	// lasts until the stream ends). nil: no spans. Either way each request carries the
	// trace context of the ctx it is made with (traceparent, tracestate), when it has one.
	TracerProvider trace.TracerProvider
}

// Client is an outbound A2A JSON-RPC client speaking either dialect. It is safe for
// concurrent use.
type Client struct {
	endpoint string // the JSON-RPC endpoint unless the card names another
	cardURL  string
	hc       *http.Client
	ownHC    bool
	token    string
	dialect  a2a.Dialect
	timeout  time.Duration
	tracer   trace.Tracer
	nextID   atomic.Int64

	mu       sync.Mutex // guards the resolution below; never held across I/O
	resolved bool
	rDialect a2a.Dialect
	rURL     string
}

// NewClient returns a client of the A2A agent at baseURL: the JSON-RPC endpoint, or with
// DialectAuto the URL the agent card is found under (a URL ending in CardPath is taken as
// the card's own URL). It returns an error for a baseURL that is not an absolute http(s)
// URL, a negative Timeout, an unknown Dialect, or a Token that cannot go in a header. It
// does no I/O.
func New(baseURL string, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, errors.New("a2a client: the base URL does not parse; want an absolute http or https URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("a2a client: base URL %q: want an absolute http or https URL", u.Redacted())
	}
	switch opts.Dialect {
	case a2a.V03, a2a.V1, DialectAuto:
	default:
		return nil, fmt.Errorf("a2a client: unknown dialect %d", int(opts.Dialect))
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("a2a client: negative timeout %s", opts.Timeout)
	}
	if strings.ContainsAny(opts.Token, "\r\n\x00") {
		return nil, errors.New("a2a client: the token contains a line break or NUL")
	}
	c := &Client{hc: opts.HTTPClient, token: opts.Token, dialect: opts.Dialect, timeout: opts.Timeout,
		tracer: tracing.Tracer(opts.TracerProvider)}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.hc == nil {
		c.hc, c.ownHC = newDefaultHTTPClient(), true
	}
	if p, ok := strings.CutSuffix(u.Path, a2a.CardPath); ok {
		c.cardURL = u.String()
		e := *u
		e.Path, e.RawPath = p+"/", ""
		c.endpoint = e.String()
	} else {
		c.endpoint = u.String()
		card := *u
		card.Path, card.RawPath = strings.TrimSuffix(u.Path, "/")+a2a.CardPath, ""
		c.cardURL = card.String()
	}
	return c, nil
}

// ParseDialect reads a dialect name: "1.0" (or "1") is V1, "0.3" is V03, "auto" or ""
// is DialectAuto. Anything else is an error.
func ParseDialect(s string) (a2a.Dialect, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return DialectAuto, nil
	case "1.0", "1", "v1", "v1.0":
		return a2a.V1, nil
	case "0.3", "0.3.0", "v0.3":
		return a2a.V03, nil
	}
	return 0, fmt.Errorf("unknown A2A dialect %q: use auto, 1.0 or 0.3", s)
}

// Close releases the idle connections of the HTTP client the Client made for itself
// (nothing when Options.HTTPClient was given). The Client stays usable. It
// returns nil.
func (c *Client) Close() error {
	if c.ownHC {
		c.hc.CloseIdleConnections()
	}
	return nil
}

// newDefaultHTTPClient is the client of Options.HTTPClient == nil (DESIGN S-2): the
// environment's proxy except for local and CGNAT hosts ([netx.NewTransport]).
func newDefaultHTTPClient() *http.Client {
	return &http.Client{Transport: netx.NewTransport()}
}

// Card fetches the agent card from CardPath under the base URL, sending A2A-Version: 1.0
// (servers that vary the card by version then show their v1.0 interfaces). Errors wrap
// [ErrTransport]: the fetch failed, the status was not 200, or the body is not a card.
func (c *Client) Card(parent context.Context) (_ *a2a.Card, err error) {
	parent, span := c.startSpan(parent, "agent card")
	status := 0
	defer func() { endSpan(span, status, err) }()
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cardURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: agent card: %w", ErrTransport, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	c.authorize(req)
	inject(ctx, req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.doError(parent, ctx, "agent card", err)
	}
	defer resp.Body.Close()
	status = resp.StatusCode
	body, err := readLimited(resp.Body, maxCardBytes)
	if err != nil {
		return nil, c.readError(parent, ctx, "agent card", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: agent card %s: HTTP %d %s%s", ErrTransport, req.URL.Redacted(), resp.StatusCode, http.StatusText(resp.StatusCode), statusHint(resp.StatusCode))
	}
	var card a2a.Card
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, fmt.Errorf("%w: agent card %s: not a card: %s", ErrTransport, req.URL.Redacted(), describeJSONError(err))
	}
	return &card, nil
}

// resolve returns the dialect and endpoint of the next call, fetching the card once
// (until a fetch succeeds) with DialectAuto.
func (c *Client) resolve(ctx context.Context) (a2a.Dialect, string, error) {
	if c.dialect != DialectAuto {
		return c.dialect, c.endpoint, nil
	}
	c.mu.Lock()
	if c.resolved {
		d, u := c.rDialect, c.rURL
		c.mu.Unlock()
		return d, u, nil
	}
	c.mu.Unlock()
	card, err := c.Card(ctx)
	if err != nil {
		return 0, "", fmt.Errorf("choose the dialect from the agent card (or set one): %w", err)
	}
	d, u := chooseInterface(card, c.cardURL, c.endpoint)
	c.mu.Lock()
	c.resolved, c.rDialect, c.rURL = true, d, u
	c.mu.Unlock()
	return d, u, nil
}

// chooseInterface picks the dialect and endpoint a card offers: the first JSONRPC
// interface of version 1.x, else the v0.3 JSONRPC url. URLs resolve against the card's
// URL; a missing or unusable one falls back to fallback.
func chooseInterface(card *a2a.Card, cardURL, fallback string) (a2a.Dialect, string) {
	ref := func(s string) string {
		base, err := url.Parse(cardURL)
		if err != nil || strings.TrimSpace(s) == "" {
			return fallback
		}
		u, err := base.Parse(strings.TrimSpace(s))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fallback
		}
		return u.String()
	}
	jsonrpc := func(b string) bool { return strings.EqualFold(strings.TrimSpace(b), "JSONRPC") }
	for _, in := range card.SupportedInterfaces {
		v := strings.TrimSpace(in.ProtocolVersion)
		if jsonrpc(in.ProtocolBinding) && (v == "1" || strings.HasPrefix(v, "1.")) {
			return a2a.V1, ref(in.URL)
		}
	}
	if card.URL != "" && (card.PreferredTransport == "" || jsonrpc(card.PreferredTransport)) {
		return a2a.V03, ref(card.URL)
	}
	for _, in := range card.AdditionalInterfaces {
		if jsonrpc(in.Transport) && in.URL != "" {
			return a2a.V03, ref(in.URL)
		}
	}
	for _, in := range card.SupportedInterfaces {
		if jsonrpc(in.ProtocolBinding) && strings.HasPrefix(strings.TrimSpace(in.ProtocolVersion), "0.") && in.URL != "" {
			return a2a.V03, ref(in.URL)
		}
	}
	return a2a.V03, fallback
}

// clientMethods names the methods the Client calls, indexed by kind, then dialect (V03,
// V1).
var clientMethods = map[methodKind][2]string{
	mSend:      {"message/send", "SendMessage"},
	mStream:    {"message/stream", "SendStreamingMessage"},
	mGetTask:   {"tasks/get", "GetTask"},
	mCancel:    {"tasks/cancel", "CancelTask"},
	mSubscribe: {"tasks/resubscribe", "SubscribeToTask"},
}

// methodKind names a call of the Client, whatever its dialect.
type methodKind int

const (
	mSend methodKind = iota
	mStream
	mGetTask
	mCancel
	mSubscribe
)

func methodName(d a2a.Dialect, k methodKind) string { return clientMethods[k][d] }

// truncate shortens s to at most n bytes without splitting a UTF-8 character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// describeJSONError names the field a JSON value failed to decode into, if it can.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("field %s must be %s, got %s", te.Field, te.Type.String(), te.Value)
	}
	return err.Error()
}

// SendMessage sends a message (SendMessage / message/send) and returns the server's Task
// or Message. A JSON-RPC error answer is a [*RemoteError]; other failures wrap
// [ErrTransport]; an error of ctx is returned wrapped as it is.
func (c *Client) SendMessage(ctx context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
	d, endpoint, err := c.resolve(ctx)
	if err != nil {
		return a2a.SendResult{}, err
	}
	method := methodName(d, mSend)
	params, err := a2a.EncodeSendParams(p, d)
	if err != nil {
		return a2a.SendResult{}, fmt.Errorf("%s: %w", method, err)
	}
	raw, err := c.call(ctx, d, endpoint, method, params)
	if err != nil {
		return a2a.SendResult{}, err
	}
	res, err := a2a.DecodeSendResult(raw)
	if err != nil {
		return a2a.SendResult{}, fmt.Errorf("%w: %s: %w", ErrTransport, method, err)
	}
	return res, nil
}

// GetTask fetches a task (GetTask / tasks/get). Errors are those of SendMessage; an
// unknown task is a [*RemoteError] matching [a2a.ErrTaskNotFound].
func (c *Client) GetTask(ctx context.Context, p *a2a.GetTaskParams) (*a2a.Task, error) {
	d, endpoint, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	method := methodName(d, mGetTask)
	params, err := a2a.EncodeGetTaskParams(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return c.taskCall(ctx, d, endpoint, method, params)
}

// CancelTask cancels a task (CancelTask / tasks/cancel) and returns it. Errors are those
// of SendMessage; a finished task is a [*RemoteError] matching [a2a.ErrTaskNotCancelable].
func (c *Client) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	d, endpoint, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	method := methodName(d, mCancel)
	params, err := a2a.EncodeTaskIDParams(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return c.taskCall(ctx, d, endpoint, method, params)
}

func (c *Client) taskCall(ctx context.Context, d a2a.Dialect, endpoint, method string, params []byte) (*a2a.Task, error) {
	raw, err := c.call(ctx, d, endpoint, method, params)
	if err != nil {
		return nil, err
	}
	t, err := a2a.DecodeTask(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTransport, method, err)
	}
	return t, nil
}

// newRequest builds a JSON-RPC POST of method with params.
func (c *Client) newRequest(ctx context.Context, d a2a.Dialect, endpoint, method string, params []byte, accept string) (*http.Request, error) {
	body, err := a2a.EncodeRequest(&a2a.Request{ID: json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10)), Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTransport, method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if d == a2a.V1 {
		req.Header.Set("A2A-Version", "1.0")
	}
	c.authorize(req)
	inject(ctx, req)
	return req, nil
}

func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// call POSTs a non-streaming request and returns its result.
func (c *Client) call(parent context.Context, d a2a.Dialect, endpoint, method string, params []byte) (_ json.RawMessage, err error) {
	parent, span := c.startSpan(parent, method)
	status := 0
	defer func() { endSpan(span, status, err) }()
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	defer cancel()
	req, err := c.newRequest(ctx, d, endpoint, method, params, "application/json")
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.doError(parent, ctx, method, err)
	}
	defer resp.Body.Close()
	status = resp.StatusCode
	body, err := readLimited(resp.Body, maxResponseBytes)
	if err != nil {
		return nil, c.readError(parent, ctx, method, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(method, resp.StatusCode, body)
	}
	return parseResponse(method, body)
}

// doError describes a failed http.Client.Do (or body read): the caller's own
// cancellation (parent) as it is, the Client's bound (ctx, derived from parent) as a
// timeout, anything else as a transport failure.
func (c *Client) doError(parent, ctx context.Context, what string, err error) error {
	if parent.Err() != nil {
		return fmt.Errorf("%s: %w", what, context.Cause(parent))
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s: no answer within %s: %w", ErrTransport, what, c.timeout, context.DeadlineExceeded)
	}
	var ue *url.Error
	if errors.As(err, &ue) { // its URL has the password stripped
		return fmt.Errorf("%w: %s: %s %s: %w", ErrTransport, what, ue.Op, ue.URL, ue.Err)
	}
	return fmt.Errorf("%w: %s: %w", ErrTransport, what, err)
}

// readError describes a failure reading a response body.
func (c *Client) readError(parent, ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return c.doError(parent, ctx, what, err)
	}
	return fmt.Errorf("%w: %s: reading the response: %w", ErrTransport, what, err)
}

// readLimited reads r to its end, failing beyond limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("the response exceeds %d bytes", limit)
	}
	return b, nil
}

// statusHint names the usual meaning of an HTTP status.
func statusHint(code int) string {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return " (check the token)"
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return " (check the URL)"
	}
	return ""
}

// statusError describes a non-200 answer; a JSON-RPC error in its body is kept as a
// [*RemoteError] in the chain (the gateway answers 413 with one).
func statusError(method string, code int, body []byte) error {
	head := fmt.Sprintf("%s: HTTP %d %s%s", method, code, http.StatusText(code), statusHint(code))
	var env responseEnvelope
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		return fmt.Errorf("%w: %s: %w", ErrTransport, head, newRemoteError(env.Error.Code, env.Error.Message, env.Error.Data))
	}
	if ex := strings.TrimSpace(printable(truncate(strings.ToValidUTF8(string(body), "\uFFFD"), maxErrorExcerpt))); ex != "" {
		return fmt.Errorf("%w: %s: %s", ErrTransport, head, ex)
	}
	return fmt.Errorf("%w: %s", ErrTransport, head)
}

// responseEnvelope is a JSON-RPC response as a client reads it.
type responseEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// parseResponse returns the result of a JSON-RPC response, or its error as a
// [*RemoteError].
func parseResponse(method string, body []byte) (json.RawMessage, error) {
	var env responseEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("%w: %s: the response is not a JSON-RPC response: %s", ErrTransport, method, describeJSONError(err))
	}
	if env.Error != nil {
		return nil, newRemoteError(env.Error.Code, env.Error.Message, env.Error.Data)
	}
	if len(env.Result) == 0 {
		return nil, fmt.Errorf("%w: %s: the response has neither result nor error", ErrTransport, method)
	}
	return env.Result, nil
}

// errHeaderTimeout cancels a streaming request whose headers did not arrive in time.
var errHeaderTimeout = errors.New("no response headers in time")

// SendStreamingMessage sends a message (SendStreamingMessage / message/stream) and
// returns its event stream once the response headers have arrived. The stream lasts until
// ctx is done or the stream is closed; the caller must Close it. Errors before the stream
// opens are those of SendMessage; a JSON-RPC error sent in the stream comes from Next as a
// [*RemoteError].
//
// Next returns the events in order, each with Seq from its SSE `id:` line (0 without
// one), then io.EOF: when the server ends the stream, or after an event that ends it (a
// Message, or a status update that is final or in a state that ends a stream), so that
// a server keeping the connection open after it does not hold the caller. A connection
// that breaks mid-stream is an error wrapping [ErrTransport].
func (c *Client) SendStreamingMessage(ctx context.Context, p *a2a.SendParams) (a2a.Stream, error) {
	d, endpoint, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	method := methodName(d, mStream)
	params, err := a2a.EncodeSendParams(p, d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return c.openStream(ctx, d, endpoint, method, params, 0)
}

// SubscribeToTask follows a task's events (SubscribeToTask / tasks/resubscribe): with
// p.AfterSeq, the events after that one (the SSE Last-Event-ID, so a server that numbers
// its events replays what a broken stream missed); without, as the server begins (a
// gateway: the task's snapshot, then its events). The stream and its errors are
// SendStreamingMessage's.
func (c *Client) SubscribeToTask(ctx context.Context, p *a2a.SubscribeParams) (a2a.Stream, error) {
	d, endpoint, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	method := methodName(d, mSubscribe)
	params, err := json.Marshal(struct {
		Tenant string `json:"tenant,omitempty"`
		ID     string `json:"id"`
	}{p.Tenant, p.ID})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return c.openStream(ctx, d, endpoint, method, params, p.AfterSeq)
}

// openStream posts a streaming method and returns its event stream once the response
// headers have arrived (see SendStreamingMessage); afterSeq > 0 is sent as Last-Event-ID.
func (c *Client) openStream(ctx context.Context, d a2a.Dialect, endpoint, method string, params []byte, afterSeq uint64) (a2a.Stream, error) {
	ctx, span := c.startSpan(ctx, method)
	st, status, err := c.open(ctx, d, endpoint, method, params, afterSeq)
	if err != nil {
		endSpan(span, status, err)
		return nil, err
	}
	if s, ok := st.(*sseStream); ok {
		setStatus(span, status)
		s.span = span  // ended when the stream ends (run)
		s.wg.Go(s.run) // exits at the end of the stream, on an error, or when Close cancels sctx
		return s, nil
	}
	endSpan(span, status, nil)
	return st, nil
}

// open is openStream's request: the stream (an *sseStream not yet reading, or the one
// event of a JSON answer) and the HTTP status (0: no answer).
func (c *Client) open(ctx context.Context, d a2a.Dialect, endpoint, method string, params []byte, afterSeq uint64) (a2a.Stream, int, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	req, err := c.newRequest(sctx, d, endpoint, method, params, "text/event-stream")
	if err != nil {
		cancel(nil)
		return nil, 0, err
	}
	if afterSeq > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(afterSeq, 10))
	}
	timer := time.AfterFunc(c.timeout, func() { cancel(errHeaderTimeout) })
	resp, err := c.hc.Do(req)
	if !timer.Stop() && err == nil { // the bound hit just as the headers came
		resp.Body.Close()
		err = context.Cause(sctx)
	}
	if err != nil {
		err = c.doError(ctx, sctx, method, err)
		cancel(nil)
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := readLimited(resp.Body, maxErrorExcerpt*16)
		resp.Body.Close()
		cancel(nil)
		return nil, resp.StatusCode, statusError(method, resp.StatusCode, body)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		defer cancel(nil)
		st, err := c.jsonAnswer(ctx, sctx, method, resp)
		return st, resp.StatusCode, err
	}
	s := &sseStream{
		method: method,
		body:   resp.Body,
		ctx:    sctx,
		cancel: cancel,
		items:  make(chan streamItem), // unbuffered: the reader stays at most one event ahead
		done:   make(chan struct{}),
	}
	return s, resp.StatusCode, nil
}

// jsonAnswer reads the plain JSON-RPC response some servers give a streaming method that
// fails at once: its error, or its result as a stream of one event. It closes the body.
func (c *Client) jsonAnswer(parent, ctx context.Context, method string, resp *http.Response) (a2a.Stream, error) {
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, maxResponseBytes)
	if err != nil {
		return nil, c.readError(parent, ctx, method, err)
	}
	raw, err := parseResponse(method, body)
	if err != nil {
		return nil, err
	}
	ev, err := a2a.DecodeEvent(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTransport, method, err)
	}
	return &oneEventStream{ev: ev}, nil
}

// oneEventStream is a stream of one event, for a server that answered with JSON.
type oneEventStream struct {
	ev   a2a.Event
	done bool
}

func (s *oneEventStream) Next(ctx context.Context) (a2a.Event, error) {
	if err := ctx.Err(); err != nil {
		return a2a.Event{}, err
	}
	if s.done {
		return a2a.Event{}, io.EOF
	}
	s.done = true
	return s.ev, nil
}

func (s *oneEventStream) Close() {}

type streamItem struct {
	ev  a2a.Event
	err error
}

// sseStream reads an SSE response in its own goroutine, so that Next can honour its ctx
// without breaking the stream.
type sseStream struct {
	method string
	body   io.ReadCloser
	ctx    context.Context // the request's; canceled by Close
	cancel context.CancelCauseFunc
	items  chan streamItem
	done   chan struct{} // closed by Close
	once   sync.Once
	wg     sync.WaitGroup
	err    error      // sticky end of the stream; used by Next only
	span   trace.Span // the call's client span, ended by run
}

// Next implements [a2a.Stream]. After the final io.EOF or error, it returns the same again;
// after Close, an error wrapping [ErrTransport].
func (s *sseStream) Next(ctx context.Context) (a2a.Event, error) {
	if s.err != nil {
		return a2a.Event{}, s.err
	}
	select {
	case it := <-s.items:
		if it.err != nil {
			s.err = it.err
			return a2a.Event{}, it.err
		}
		return it.ev, nil
	case <-s.done:
		s.err = errStreamClosed
		return a2a.Event{}, s.err
	case <-ctx.Done():
		return a2a.Event{}, ctx.Err()
	}
}

// Close implements [a2a.Stream]: it cancels the request, waits for the reader goroutine and
// releases the connection.
func (s *sseStream) Close() {
	s.once.Do(func() {
		close(s.done)
		s.cancel(errStreamClosed)
		s.wg.Wait()
	})
}

// run reads frames and hands their events to Next until the stream ends.
func (s *sseStream) run() {
	defer s.span.End()
	defer s.cancel(nil)
	defer s.body.Close()
	r := sse.NewReader(s.body, maxResponseBytes)
	for {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				s.send(streamItem{err: io.EOF})
			} else {
				s.send(streamItem{err: s.readError(err)})
			}
			return
		}
		if len(bytes.TrimSpace(f.Data)) == 0 {
			continue // an event with empty data carries no response
		}
		ev, err := s.decode(f)
		if err != nil {
			s.send(streamItem{err: err})
			return
		}
		if !s.send(streamItem{ev: ev}) {
			return
		}
		if ev.Message != nil || (ev.Status != nil && (ev.Status.Final || ev.Status.Status.State.EndsStream())) {
			s.send(streamItem{err: io.EOF})
			return
		}
	}
}

func (s *sseStream) send(it streamItem) bool {
	select {
	case s.items <- it:
		return true
	case <-s.done:
		return false
	}
}

func (s *sseStream) readError(err error) error {
	if cause := context.Cause(s.ctx); cause != nil && !errors.Is(cause, errStreamClosed) {
		return fmt.Errorf("%s: %w", s.method, cause)
	}
	return fmt.Errorf("%w: %s: the stream broke: %w", ErrTransport, s.method, err)
}

// decode reads one frame's JSON-RPC response into an event.
func (s *sseStream) decode(f sse.Event) (a2a.Event, error) {
	raw, err := parseResponse(s.method, f.Data)
	if err != nil {
		return a2a.Event{}, err
	}
	ev, err := a2a.DecodeEvent(raw)
	if err != nil {
		return a2a.Event{}, fmt.Errorf("%w: %s: %w", ErrTransport, s.method, err)
	}
	if f.HasID {
		ev.Seq, _ = strconv.ParseUint(strings.TrimSpace(f.ID), 10, 64) // not a number: 0
	}
	return ev, nil
}
