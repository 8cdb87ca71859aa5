package push

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/a2a-gateway/gateway/internal/tracing"
)

// targetKey carries a request's checked target to the dialer.
type targetKey struct{}

// newTransport returns the delivery transport: no proxy, and a dialer that connects
// only to the addresses the guard resolved and checked for the request (carried in the
// context), checking each again as it is dialled.
func newTransport(g *Guard, tlsConfig *tls.Config, perHost int, timeout time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: timeout, ControlContext: func(ctx context.Context, _, address string, _ syscall.RawConn) error {
		t, _ := ctx.Value(targetKey{}).(*target)
		ap, err := netip.ParseAddrPort(address)
		if err != nil || t == nil {
			return fmt.Errorf("push: dialling %s without a checked target", address)
		}
		if t.byName {
			return nil
		}
		return g.allowed(ap.Addr())
	}}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialChecked(d),
		TLSClientConfig:       tlsConfig.Clone(),
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxConnsPerHost:       perHost,
		MaxIdleConnsPerHost:   perHost,
		IdleConnTimeout:       30 * time.Second,
		DisableCompression:    true,
	}
	return tr
}

// dialChecked dials the addresses of the request's checked target in turn (never the
// host name: there is no second lookup for DNS rebinding to answer).
func dialChecked(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		t, _ := ctx.Value(targetKey{}).(*target)
		if t == nil {
			return nil, errors.New("push: dial without a checked target")
		}
		var errs []error
		for _, a := range t.addrs {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), t.port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}

// attempt makes one attempt of d within Timeout: check the URL (a refusal sends
// nothing), sign, post, read (at most MaxBody of) the answer. The attempt's Outcome is
// Delivered, Refused or Retry (failed; the caller decides between Retry and Expired).
func (dl *Deliverer) attempt(ctx context.Context, d Delivery) Attempt {
	ctx, cancel := context.WithTimeout(ctx, dl.opts.Timeout)
	defer cancel()
	start := dl.opts.Now()
	a := Attempt{At: start}
	t, err := dl.opts.Guard.resolve(ctx, d.URL)
	if err != nil {
		var ue *URLError
		if errors.As(err, &ue) && ue.Err == nil {
			a.Outcome, a.Error = OutcomeRefused, err.Error()
			return a
		}
		a.Outcome, a.Error = OutcomeRetry, err.Error()
		return a
	}
	req, err := dl.request(context.WithValue(ctx, targetKey{}, t), d, start)
	if err != nil {
		a.Outcome, a.Error = OutcomeRefused, err.Error()
		return a
	}
	resp, err := dl.client.Do(req)
	if err != nil {
		a.Latency = dl.opts.Now().Sub(start)
		a.Outcome, a.Error = failure(err), describe(ctx, err, dl.opts.Timeout)
		return a
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, dl.opts.MaxBody)) // a 2xx is final whatever the rest
	_ = resp.Body.Close()
	a.Latency, a.Status = dl.opts.Now().Sub(start), resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		a.Outcome = OutcomeDelivered
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		a.Outcome, a.Error = OutcomeRetry, fmt.Sprintf("HTTP %d: redirect to %s not followed", resp.StatusCode, clip(resp.Header.Get("Location"), 200))
	default:
		a.Outcome, a.Error = OutcomeRetry, fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return a
}

// request builds d's POST with its headers and signature.
func (dl *Deliverer) request(ctx context.Context, d Delivery, now time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return nil, fmt.Errorf("push URL refused: %w", err)
	}
	h := req.Header
	h.Set("Content-Type", d.ContentType)
	h.Set("User-Agent", "a2a-gateway-push/1")
	h.Set("X-A2A-Event-Id", d.ID)
	h.Set(SignatureHeader, dl.opts.Signer.Sign(d, now))
	tracing.Inject(ctx, h) // the attempt's span: traceparent, tracestate
	if d.Token != "" {
		h.Set("X-A2A-Notification-Token", d.Token)
	}
	if d.AuthScheme != "" {
		h.Set("Authorization", strings.TrimSpace(d.AuthScheme+" "+d.AuthCredentials))
	}
	return req, nil
}

// failure is the outcome of a request that got no answer: Refused when the dialer's
// check refused the address, else Retry.
func failure(err error) Outcome {
	if errors.Is(err, ErrRefused) {
		return OutcomeRefused
	}
	return OutcomeRetry
}

// describe says why a request got no answer, without its URL (which may hold a token).
func describe(ctx context.Context, err error, timeout time.Duration) string {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return fmt.Sprintf("no answer within the attempt timeout (%v)", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return clip(err.Error(), 300)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// backoff returns the wait before the attempt after the attempts-th failed one (1 for
// the first): exponential from MinBackoff, capped at MaxBackoff, with full jitter above
// MinBackoff, so a wait is in [MinBackoff, min(MaxBackoff, MinBackoff·2^(attempts-1))].
func backoff(minB, maxB time.Duration, attempts int) time.Duration {
	ceil := maxB
	if attempts-1 < 32 && minB<<(attempts-1) > 0 && minB<<(attempts-1) < maxB {
		ceil = minB << (attempts - 1)
	}
	if ceil <= minB {
		return minB
	}
	return minB + rand.N(ceil-minB+1)
}
