package otlpwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// backoff is the exponential backoff between retries: initial, then ×1.5 up to max, each
// randomized by ±50% (otlptracehttp's, from cenkalti/backoff's defaults).
type backoff struct{ initial, max time.Duration }

func (b backoff) next(interval time.Duration) time.Duration {
	return min(interval*3/2, b.max)
}

func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d+1) // uniform in [d/2, 3d/2]
}

// post sends body until it is accepted, refused, or a retry would pass ctx's deadline.
func (e *Exporter) post(ctx context.Context, body []byte) error {
	interval := e.backoff.initial
	for attempt := 1; ; attempt++ {
		retry, after, err := e.attempt(ctx, body)
		if !retry {
			return err
		}
		delay := max(after, jitter(interval))
		interval = e.backoff.next(interval)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
			return fmt.Errorf("%d attempts; the next, in %v, would pass the export timeout: %w", attempt, delay.Round(time.Millisecond), err)
		}
		if werr := wait(ctx, delay); werr != nil {
			return fmt.Errorf("%d attempts, %w: %w", attempt, werr, err)
		}
	}
}

// wait returns after d, or ctx's error when it is done first.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// attempt posts body once and reports whether the outcome may be retried, after how
// long the collector asked (Retry-After), and the error.
func (e *Exporter) attempt(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	p := &payload{b: body}
	defer p.detach() // the transport may still hold the body: it reads nothing after this
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, p.reader())
	if err != nil {
		return false, 0, err
	}
	req.Header = e.headers // read only, by the transport
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return p.reader(), nil }
	resp, err := e.client.Do(req)
	if err != nil {
		return false, 0, err
	}
	defer resp.Body.Close()
	return response(e.url, resp)
}

// Response bounds: what is read of a success (otlptracehttp's maximum response size),
// and how much of a refusal's body its error keeps.
const (
	maxResponse  = 4 << 20
	errorSnippet = 512
)

// response reads what the collector answered: nil, or a [*PartialSuccessError], for
// 2xx; a retryable [*HTTPError] for 429, 502, 503 and 504; an [*HTTPError] otherwise.
func response(url string, resp *http.Response) (retry bool, after time.Duration, err error) {
	switch c := resp.StatusCode; {
	case c >= 200 && c <= 299:
		return false, 0, partialSuccess(resp)
	case c == http.StatusTooManyRequests, c == http.StatusBadGateway, c == http.StatusServiceUnavailable, c == http.StatusGatewayTimeout:
		return true, retryAfter(resp.Header.Get("Retry-After"), time.Now()), httpError(url, resp)
	default:
		return false, 0, httpError(url, resp)
	}
}

func httpError(url string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorSnippet))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse)) // so the connection is reused
	return &HTTPError{URL: url, StatusCode: resp.StatusCode, Status: resp.Status, Body: strings.TrimSpace(string(b))}
}

// retryAfter is a Retry-After header's delay: seconds, or an HTTP date; 0 when absent
// or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, int64(time.Duration(1<<63-1)/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// payload is a request body the transport may read after Do has returned (it writes
// the body in its own goroutine): detach makes later reads fail, so that the encoder's
// buffer can be reused at once.
type payload struct {
	mu sync.Mutex
	b  []byte
}

var errBodyDetached = errors.New("otlp request body read after its export returned")

func (p *payload) reader() io.ReadCloser { return &payloadReader{p: p} }

func (p *payload) detach() {
	p.mu.Lock()
	p.b = nil
	p.mu.Unlock()
}

type payloadReader struct {
	p   *payload
	off int
}

func (r *payloadReader) Read(b []byte) (int, error) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if r.p.b == nil {
		return 0, errBodyDetached
	}
	if r.off >= len(r.p.b) {
		return 0, io.EOF
	}
	n := copy(b, r.p.b[r.off:])
	r.off += n
	return n, nil
}

func (*payloadReader) Close() error { return nil }
