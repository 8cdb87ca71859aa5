package agent

// Shared by the HTTP chat backends (OpenAI, Anthropic): the default client, sending one
// request, the server-sent-events reader, and turning failures into safe errors.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/internal/netx"
	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/projection"
	// Named so: the package's tests have a helper called sse.
	sseread "github.com/a2a-gateway/gateway/internal/sse"
)

// DefaultTimeout bounds one reply of a backend whose Config leaves Timeout zero.
const DefaultTimeout = 300 * time.Second

const (
	maxSSEEvent   = 1 << 20 // the largest stream event accepted; a real delta is a few hundred bytes
	maxErrorBody  = 4 << 10 // how much of an error response is read, for the log
	maxLogExcerpt = 512     // how much of it is logged
)

// backendError is the error a backend returns for a failure: short, fixed text naming the
// backend and the failure class, safe to show a peer; it wraps ErrBackend. The detail
// (upstream status, body excerpt, stderr) goes to the log instead.
func backendError(backend, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", backend, fmt.Sprintf(format, args...), ErrBackend)
}

// newHTTPClient is the client a chat backend uses when its Config gives none: it does not
// follow redirects (a redirect would carry the API key to another host, and x-api-key is
// not a header net/http strips), and it never sends requests for loopback, private,
// link-local or CGNAT addresses through a proxy from the environment ([netx.NewTransport]).
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport:     netx.NewTransport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// parseBaseURL checks a backend's base URL and returns it without a trailing slash.
func parseBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("URL %q: want an absolute http or https URL", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// httpBackend is what the chat backends share: where and how to send, and the logger.
type httpBackend struct {
	name    string // "openai", "anthropic": error prefix and log attribute
	url     string // the endpoint POSTed to
	client  *http.Client
	owned   bool // the client is ours: Close releases its idle connections
	timeout time.Duration
	// retryBase is the first backoff of a retry the upstream named no wait for
	// (defaultRetryBase; tests shorten it).
	retryBase time.Duration
	onRetry   func(reason string) // the Config's OnRetry (nil: none)
	secret    string              // the API key, redacted from anything logged
	log       *slog.Logger
	tracer    trace.Tracer // the Config's TracerProvider's (a no-op one without)
	model     string       // the model requested, for the spans
}

func newHTTPBackend(name, endpoint string, client *http.Client, timeout time.Duration, secret string, onRetry func(string), logger *slog.Logger) httpBackend {
	b := httpBackend{name: name, url: endpoint, client: client, timeout: timeout, secret: secret, retryBase: defaultRetryBase, onRetry: onRetry,
		tracer: tracing.Tracer(nil)}
	if b.client == nil {
		b.client, b.owned = newHTTPClient(), true
	}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b.log = logger.With("component", "agent", "backend", name)
	return b
}

func (b *httpBackend) close() {
	if b.owned {
		b.client.CloseIdleConnections()
	}
}

// Retries. A request the upstream refused for a passing reason (HTTP 408, 409, 429 or
// any 5xx, Anthropic's 529 "overloaded" among them, unless the answer says
// "x-should-retry: false"; any status that says "true") or that could not be sent (the
// connection failed before an answer) is sent again, at most maxRetries times, as the
// providers' own SDKs do: after the wait the answer asks for (retry-after-ms, then
// Retry-After in seconds or as an HTTP date), else after a backoff of about retryBase,
// then twice that. A wait over maxRetryWait, or one that would pass the round's deadline,
// is not waited: the refusal is the turn's error at once. Nothing of the reply has been
// read before a retry, so nothing is emitted twice.
const (
	maxRetries       = 2
	maxRetryWait     = 30 * time.Second
	defaultRetryBase = 500 * time.Millisecond
)

// post sends body and returns the response if it is a 200 (retrying as above); the
// caller closes its body. Any other outcome is returned as the error the turn ends with
// (parent is the turn's own context, ctx the one bounded by the timeout).
func (b *httpBackend) post(parent, ctx context.Context, t Turn, body []byte, header http.Header) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, wait, reason, err := b.send(parent, ctx, t, body, header, attempt)
		if err == nil {
			return resp, nil
		}
		if attempt > maxRetries || wait < 0 || wait > maxRetryWait {
			return nil, err
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
			return nil, err
		}
		b.log.InfoContext(parent, "retrying the upstream request", "context_id", t.ContextID, "task_id", t.TaskID,
			"attempt", attempt+1, "wait", wait, "reason", reason)
		if b.onRetry != nil {
			b.onRetry(reason)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, b.broken(parent, ctx, t, "waiting to retry the upstream request", ctx.Err())
		case <-timer.C:
		}
	}
}

// send is one attempt of post: the 200 response, or the turn's error, how long to wait
// before the next attempt (-1: the failure is not worth another) and why (the upstream's
// status, or "connection").
func (b *httpBackend) send(parent, ctx context.Context, t Turn, body []byte, header http.Header, attempt int) (*http.Response, time.Duration, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		b.log.WarnContext(parent, "building the upstream request failed", "context_id", t.ContextID, "task_id", t.TaskID, "err", err)
		return nil, -1, "", backendError(b.name, "the request could not be built")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	tracing.Inject(ctx, req.Header)
	resp, err := b.client.Do(req)
	if err != nil {
		wait := b.backoff(attempt)
		if parent.Err() != nil || ctx.Err() != nil {
			wait = -1
		}
		return nil, wait, "connection", b.broken(parent, ctx, t, "sending the upstream request failed", err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, 0, "", nil
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	b.log.WarnContext(parent, "upstream refused the request", "context_id", t.ContextID, "task_id", t.TaskID,
		"status", resp.StatusCode, "attempt", attempt, "body", b.excerpt(excerpt))
	err = withCause(statusCause(resp.StatusCode, excerpt), backendError(b.name, "upstream answered HTTP %d%s", resp.StatusCode, statusHint(resp.StatusCode)))
	reason := strconv.Itoa(resp.StatusCode)
	if !transientStatus(resp.StatusCode, resp.Header.Get("X-Should-Retry")) {
		return nil, -1, reason, err
	}
	if wait, ok := retryAfter(resp.Header, time.Now()); ok {
		return nil, wait, reason, err
	}
	return nil, b.backoff(attempt), reason, err
}

// transientStatus reports whether an upstream refusal may pass, as the providers' SDKs
// decide it: the answer's x-should-retry header ("true" or "false") when it has one, else
// the status (408, 409, 429, 5xx).
func transientStatus(code int, shouldRetry string) bool {
	switch shouldRetry {
	case "true":
		return true
	case "false":
		return false
	}
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// retryAfter returns the wait an upstream answer asks for: retry-after-ms (OpenAI), else
// Retry-After in seconds or as an HTTP date; false when it names none.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < float64(math.MaxInt64/int64(time.Millisecond)) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		if s > maxRetryWait.Seconds() {
			return maxRetryWait + time.Second, true // too long to wait: post gives up
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// backoff is the wait before attempt+1 when the upstream named none: about retryBase
// doubled per attempt, with ±25% jitter so that turns refused together do not return
// together.
func (b *httpBackend) backoff(attempt int) time.Duration {
	d := b.retryBase << (attempt - 1)
	return d*3/4 + rand.N(d/2+1)
}

// broken turns a transport or read failure into the turn's error: the caller's own
// cancellation as it is, the timeout and anything else as a logged backend error.
func (b *httpBackend) broken(parent, ctx context.Context, t Turn, msg string, err error) error {
	if perr := parent.Err(); perr != nil {
		return perr
	}
	if ctx.Err() != nil {
		b.log.WarnContext(parent, "upstream reply timed out", "context_id", t.ContextID, "task_id", t.TaskID, "timeout", b.timeout)
		return withCause(CauseTimeout, backendError(b.name, "no complete reply within %s", b.timeout))
	}
	b.log.WarnContext(parent, msg, "context_id", t.ContextID, "task_id", t.TaskID, "err", b.redact(err.Error()))
	return backendError(b.name, "the connection to upstream failed")
}

// malformed logs a stream the backend cannot read and returns the turn's error.
func (b *httpBackend) malformed(parent context.Context, t Turn, what string, data []byte) error {
	b.log.WarnContext(parent, "malformed upstream stream: "+what, "context_id", t.ContextID, "task_id", t.TaskID, "data", b.excerpt(data))
	return backendError(b.name, "upstream sent a malformed stream")
}

// upstreamError logs an error the upstream reported inside a 200 reply or its stream.
func (b *httpBackend) upstreamError(parent context.Context, t Turn, kind, message string) error {
	b.log.WarnContext(parent, "upstream reported an error", "context_id", t.ContextID, "task_id", t.TaskID,
		"error_type", b.redact(kind), "error_message", b.excerpt([]byte(message)))
	return withCause(kindCause(kind), backendError(b.name, "upstream reported an error"))
}

// excerpt is the start of an upstream body as loggable text, with the API key redacted
// (before the cut, so that no part of the key survives it).
func (b *httpBackend) excerpt(p []byte) string {
	s := b.redact(string(p))
	if len(s) <= maxLogExcerpt {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ToValidUTF8(s[:maxLogExcerpt], "\uFFFD") + "…"
}

func (b *httpBackend) redact(s string) string {
	if b.secret == "" {
		return s
	}
	return strings.ReplaceAll(s, b.secret, "[REDACTED]")
}

// statusHint names the usual meaning of an upstream status.
func statusHint(code int) string {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return " (authentication refused)"
	case code == http.StatusTooManyRequests:
		return " (rate limited)"
	case code == 529 || code == http.StatusServiceUnavailable:
		return " (overloaded)"
	case code >= 500:
		return " (upstream error)"
	case code >= 300 && code < 400:
		return " (redirect not followed)"
	case code >= 400:
		return " (request refused)"
	}
	return ""
}

// isJSON reports whether a response is one JSON document rather than an event stream (an
// endpoint that ignores "stream": true).
func isJSON(resp *http.Response) bool {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	return strings.HasPrefix(ct, "application/json")
}

// isHTML reports whether a 200 answer is a web page: never a chat reply, but what a wrong
// base URL (a site, a console) or a proxy's login page answers.
func isHTML(resp *http.Response) bool {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	return strings.HasPrefix(ct, "text/html")
}

// webPage logs a 200 answer that is a web page and returns the turn's error.
func (h *httpBackend) webPage(parent context.Context, t Turn, resp *http.Response) error {
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	h.log.WarnContext(parent, "upstream answered a web page, not a chat reply (is the configured URL the API's base URL?)", "context_id", t.ContextID,
		"task_id", t.TaskID, "url", h.url, "content_type", resp.Header.Get("Content-Type"), "body", h.excerpt(excerpt))
	return backendError(h.name, "upstream answered a web page (Content-Type text/html), not a reply")
}

// newSSEReader reads an upstream event stream (internal/sse, the gateway's one SSE
// reader) with events of at most maxSSEEvent bytes; an event over it is an error wrapping
// errSSETooLong.
func newSSEReader(r io.Reader) *sseread.Reader { return sseread.NewReader(r, maxSSEEvent) }

// errSSETooLong is wrapped by the error of an event larger than maxSSEEvent.
var errSSETooLong = sseread.ErrTooLong

// readBody reads an upstream answer (a stream or one JSON object), emits its text and
// collects its tool calls in r. parent is the caller's context, ctx the same bounded by
// the backend's timeout.
type readBody func(parent, ctx context.Context, t Turn, body io.Reader, emit Emit, r *round) error

// encoder maps a request, with the tools offered (none when specs is empty), to a body.
type encoder func(req projection.Request, specs []ToolSpec) ([]byte, error)

// reply runs the turn: it posts the request encode makes of t, reads the answer with
// whole (a JSON answer) or stream (an event stream) through the [INPUT_REQUIRED] marker
// filter, and while the model calls tools (and t.Tools offers some) runs them, appends
// the calls and their results to the request and asks again, within the turn's tool
// budget. Past the budget the reply ends with a note. It reports how the reply ended.
func (h *httpBackend) reply(ctx context.Context, t Turn, encode encoder, header http.Header, emit Emit, whole, stream readBody) (Result, error) {
	f := newMarkerFilter(emit)
	req := chatRequest(t)
	var specs []ToolSpec
	if t.Tools != nil {
		specs = t.Tools.Specs()
	}
	budget := newToolBudget(t)
	used := callIDs(req.Messages) // the tool-call ids of the request, growing with each round
	var total Usage
	for n := 0; ; n++ {
		body, err := encode(req, specs)
		if err != nil {
			h.log.WarnContext(ctx, "the request cannot be sent", "context_id", t.ContextID, "task_id", t.TaskID, "err", err)
			return Result{}, unsendable(h.name, err)
		}
		r, err := h.round(ctx, t, body, header, f.write, whole, stream)
		if err != nil {
			return Result{}, err
		}
		total.InputTokens, total.OutputTokens, total.CachedTokens = total.InputTokens+r.usage.in, total.OutputTokens+r.usage.out, total.CachedTokens+r.usage.cached
		if len(r.calls) == 0 {
			break
		}
		if len(specs) == 0 {
			h.log.WarnContext(ctx, "the model called a tool none was offered; ignored", "context_id", t.ContextID, "task_id", t.TaskID)
			break
		}
		r.finish(n, used)
		if note, ok := budget.admit(len(r.calls)); !ok {
			h.log.InfoContext(ctx, "tool budget spent", "context_id", t.ContextID, "task_id", t.TaskID, "calls", budget.used)
			if err := f.write(note); err != nil {
				return Result{}, err
			}
			break
		}
		more, err := runTools(ctx, t.Tools, r, budget.deadline)
		if err != nil {
			return Result{}, err
		}
		req.Messages = append(req.Messages[:len(req.Messages):len(req.Messages)], more...)
	}
	found, err := f.finish()
	return Result{InputRequired: found, Usage: total}, err
}

// round posts body and reads one answer, bounded by the backend's timeout, under a
// client span (startChat).
func (h *httpBackend) round(ctx context.Context, t Turn, body []byte, header http.Header, emit Emit, whole, stream readBody) (r *round, err error) {
	ctx, span := h.startChat(ctx)
	defer func() { endChat(span, r, err) }()
	return h.exchange(ctx, t, body, header, emit, whole, stream)
}

// exchange is round's request and answer.
func (h *httpBackend) exchange(ctx context.Context, t Turn, body []byte, header http.Header, emit Emit, whole, stream readBody) (*round, error) {
	rctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	resp, err := h.post(ctx, rctx, t, body, header.Clone())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := &round{}
	collect := emit
	if t.Tools != nil {
		// Only a round with tools offered is repeated to the model (runTools, with its
		// calls); otherwise the text would stay here, beside the turn's own copy, until
		// the reply ends.
		collect = func(chunk string) error {
			r.text.WriteString(chunk)
			return emit(chunk)
		}
	}
	if isHTML(resp) {
		return nil, h.webPage(ctx, t, resp)
	}
	read := stream
	if isJSON(resp) {
		read = whole
	}
	if err := read(ctx, rctx, t, resp.Body, collect, r); err != nil {
		return nil, err
	}
	return r, nil
}
