package otlpwire

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults of Config's zero fields: the SDK exporter's (OTEL_EXPORTER_OTLP_TIMEOUT's
// default, and otlptracehttp's retry settings).
const (
	DefaultTimeout        = 10 * time.Second
	DefaultInitialBackoff = 5 * time.Second
	DefaultMaxBackoff     = 30 * time.Second
)

// Config is where and how an Exporter posts. The zero value of each field but URL
// means its default.
type Config struct {
	// URL is the traces URL spans are posted to (http or https), e.g.
	// http://localhost:4318/v1/traces.
	URL string
	// Headers are sent with every request (OTEL_EXPORTER_OTLP_HEADERS).
	Headers map[string]string
	// Timeout bounds one ExportSpans, its retries included; zero is DefaultTimeout.
	Timeout time.Duration
	// Gzip compresses the request body (Content-Encoding: gzip).
	Gzip bool
	// InitialBackoff and MaxBackoff bound the exponential backoff between retries (a
	// Retry-After longer than the backoff is honoured); zero is the default.
	InitialBackoff, MaxBackoff time.Duration
	// Client posts the requests; nil is a client of the exporter's own, whose idle
	// connections Shutdown closes.
	Client *http.Client
}

// Exporter is a sdktrace.SpanExporter that writes each batch straight into an OTLP/HTTP
// protobuf request (no generated structs) and posts it. Make one with New.
type Exporter struct {
	url     string
	headers http.Header // Content-Type, Content-Encoding, User-Agent and Config.Headers
	timeout time.Duration
	backoff backoff
	client  *http.Client
	own     *http.Transport // nil when Config.Client was given
	gzip    bool

	// spare is the encoder (and buffers) of the last export, taken by the next one: a
	// serial caller (the batch processor) reuses one; a concurrent one makes its own.
	spare atomic.Pointer[state]

	mu       sync.Mutex // guards the fields below; never held across I/O
	stopped  bool
	inflight map[*state]context.CancelFunc
	drained  chan struct{} // closed when stopped and inflight is empty; nil before Shutdown
}

// state is what one export writes into.
type state struct {
	enc  encoder
	zbuf bytes.Buffer
	zw   *gzip.Writer
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// ErrShutdown is returned by ExportSpans after Shutdown.
var ErrShutdown = errors.New("otlp exporter is shut down")

// New returns an Exporter posting to cfg.URL. It returns an error wrapping
// [ErrInvalidConfig] if the URL is not an absolute http or https URL or a duration is
// negative.
func New(cfg Config) (*Exporter, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Exporter{
		url:      cfg.URL,
		headers:  requestHeaders(cfg),
		timeout:  orDefault(cfg.Timeout, DefaultTimeout),
		backoff:  backoff{initial: orDefault(cfg.InitialBackoff, DefaultInitialBackoff), max: orDefault(cfg.MaxBackoff, DefaultMaxBackoff)},
		client:   cfg.Client,
		gzip:     cfg.Gzip,
		inflight: map[*state]context.CancelFunc{},
	}
	if e.client == nil {
		e.own = newTransport()
		e.client = &http.Client{Transport: e.own}
	}
	return e, nil
}

// ErrInvalidConfig is wrapped by New's errors.
var ErrInvalidConfig = errors.New("otlp exporter configuration")

func (c Config) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: traces URL %q: want an http:// or https:// URL", ErrInvalidConfig, c.URL)
	}
	if c.Timeout < 0 || c.InitialBackoff < 0 || c.MaxBackoff < 0 {
		return fmt.Errorf("%w: negative duration", ErrInvalidConfig)
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// userAgent names this exporter to the collector.
const userAgent = "a2a-gateway OTLP exporter (otlpwire)"

func requestHeaders(cfg Config) http.Header {
	h := http.Header{}
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/x-protobuf")
	h.Set("User-Agent", userAgent)
	if cfg.Gzip {
		h.Set("Content-Encoding", "gzip")
	}
	return h
}

// newTransport is http.DefaultTransport's settings (as otlptracehttp's own transport),
// in a transport of the exporter's own.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 2 // one batcher posts at a time
	return t
}

// ExportSpans encodes spans into one request and posts it, retrying 429, 502, 503 and
// 504 within the exporter's timeout. It returns nil for no spans; [ErrShutdown] after
// Shutdown; an error wrapping an [*HTTPError] for a refused request (after the retries
// for a retryable status); an error wrapping a [*PartialSuccessError] when the
// collector accepted the request but rejected some spans; and other errors for the
// transport or ctx.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	st := e.take()
	defer e.spare.Store(st)
	body, err := st.body(spans, e.gzip)
	if err != nil || body == nil {
		return err // nil: every span was nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if err := e.register(st, cancel); err != nil {
		return err
	}
	defer e.unregister(st)
	if err := e.post(ctx, body); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

func (e *Exporter) take() *state {
	if st := e.spare.Swap(nil); st != nil {
		return st
	}
	return &state{}
}

// body is the request body of spans: the encoded request, gzipped when asked; nil when
// no span was non-nil. It stays valid until st's next use.
func (st *state) body(spans []sdktrace.ReadOnlySpan, gz bool) ([]byte, error) {
	raw := st.enc.encode(spans)
	if len(raw) == 0 {
		return nil, nil
	}
	if !gz {
		return raw, nil
	}
	st.zbuf.Reset()
	if st.zw == nil {
		st.zw = gzip.NewWriter(&st.zbuf)
	} else {
		st.zw.Reset(&st.zbuf)
	}
	if _, err := st.zw.Write(raw); err != nil {
		return nil, fmt.Errorf("traces export: gzip: %w", err)
	}
	if err := st.zw.Close(); err != nil {
		return nil, fmt.Errorf("traces export: gzip: %w", err)
	}
	return st.zbuf.Bytes(), nil
}

// register records an export in flight, so that Shutdown can cancel it.
func (e *Exporter) register(st *state, cancel context.CancelFunc) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return ErrShutdown
	}
	e.inflight[st] = cancel
	return nil
}

func (e *Exporter) unregister(st *state) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.inflight, st)
	if e.stopped && len(e.inflight) == 0 && e.drained != nil {
		close(e.drained)
		e.drained = nil
	}
}

// Shutdown stops the exporter: later ExportSpans return [ErrShutdown], exports in
// flight are cancelled and waited for (until ctx is done: then it returns ctx's
// error), and the idle connections of the exporter's own client are closed. The
// exporter holds no spans between calls, so there is nothing to flush (the batch
// processor's ForceFlush and Shutdown export what it holds before they call this).
// Calling it again returns nil at once.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil
	}
	e.stopped = true
	for _, cancel := range e.inflight {
		cancel()
	}
	var drained chan struct{}
	if len(e.inflight) > 0 {
		drained = make(chan struct{})
		e.drained = drained
	}
	e.mu.Unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if e.own != nil {
		e.own.CloseIdleConnections()
	}
	return nil
}
