package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/push"
	"github.com/a2a-gateway/gateway/turn"
)

const pushSigningDescription = "Every push notification this agent sends carries the header X-A2A-Signature: a JWS (RFC 7515) in compact serialization, alg EdDSA (Ed25519), whose kid names a key of the JWK Set at params.jwksUrl and whose claims are iat, jti (the event id, also in X-A2A-Event-Id: the same on every retry), task_id, context_id and body_sha256 (base64url SHA-256 of the exact request body). Verify the signature with that key, compare body_sha256 with the body received, and de-duplicate by jti."

// pushService is push delivery as the server runs it: the SSRF guard (also turn's,
// to check URLs when a config is set), the signing key, and the deliverer, which
// Server owns: started by startPush, stopped by its closer.
type pushService struct {
	guard  *push.Guard
	signer *push.Signer
	dl     atomic.Pointer[push.Deliverer] // nil until startPush
}

// pushTestOptions are push settings only tests set (in-process, through Config; no
// flag): a short backoff so that retries take milliseconds, and a resolver for the SSRF
// guard so that a host name can be made to resolve to a refused address. Zero: the
// deliverer's defaults and the system resolver.
type pushTestOptions struct {
	minBackoff, maxBackoff time.Duration
	resolver               push.Resolver
}

// newPushService builds the guard and loads (or, on bbolt, creates) the signing key.
// nil, nil: push is off (--push=false, or a shared store without --push-signing-key,
// which is logged). Errors: the key file.
func newPushService(ctx context.Context, cfg Config, log *slog.Logger) (*pushService, error) {
	if !cfg.Push {
		return nil, nil
	}
	gopts, err := cfg.pushGuardOptions()
	if err != nil {
		return nil, err // Validate reported it already
	}
	gopts.Resolver = cfg.pushTest.resolver
	var signer *push.Signer
	switch {
	case cfg.Store != "" && cfg.PushSigningKey == "":
		log.WarnContext(ctx, "push notifications are off: with --store postgres every instance must sign with the same key; give it with --push-signing-key FILE (openssl genpkey -algorithm ed25519 -out FILE)")
		return nil, nil
	case cfg.Store != "":
		signer, err = push.LoadKey(cfg.PushSigningKey) // never a key of this instance's own
	default:
		signer, err = push.LoadOrCreateKey(cfg.pushKeyPath())
	}
	if err != nil {
		return nil, err
	}
	return &pushService{guard: push.NewGuard(gopts), signer: signer}, nil
}

// startPush starts the deliverer on outbox (nothing when push is off or outbox is nil)
// and registers its stop: Run's context is canceled and its return awaited, until ctx
// of Close is done.
func (s *Server) startPush(outbox push.Outbox) error {
	p := s.push
	if p == nil || outbox == nil {
		return nil
	}
	dl, err := push.NewDeliverer(push.Options{Outbox: outbox, Guard: p.guard, Signer: p.signer,
		RetryFor: s.cfg.PushRetryFor, MinBackoff: s.cfg.pushTest.minBackoff, MaxBackoff: s.cfg.pushTest.maxBackoff, Logger: s.log.With("component", "push"), Observer: s.metrics.push,
		TracerProvider: s.cfg.TracerProvider})
	if err != nil {
		return err
	}
	p.dl.Store(dl)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dl.Run(ctx) }() // exits when the closer cancels ctx
	s.closers.add(func(cctx context.Context) error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-cctx.Done():
			return fmt.Errorf("push deliverer still stopping at the deadline: %w", cctx.Err())
		}
	})
	return nil
}

// notify wakes the deliverer after a commit that created deliveries.
func (p *pushService) notify() {
	if dl := p.dl.Load(); dl != nil {
		dl.Notify()
	}
}

// jwksHandler serves the signing key's JWK Set (public, like the card).
func (p *pushService) jwksHandler() http.Handler {
	body := p.signer.JWKS()
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(body)
	})
}

// cardExtension declares where the signing key is.
func (p *pushService) cardExtension() a2a.CardExtension {
	return a2a.CardExtension{URI: push.SigningExtension, Description: pushSigningDescription, Params: map[string]any{
		"jwksUrl": a2a.CardURL(push.JWKSPath), "alg": "EdDSA", "header": push.SignatureHeader, "kid": p.signer.KeyID(),
	}}
}

// pushTurnConfig gives the turn runner the guard (it checks a URL when a config is
// set) and the deliverer's wake-up. Push off: neither (the nil check matters: a nil
// *push.Guard in the interface would not read as "off").
func (s *Server) pushTurnConfig(tcfg *turn.Config) {
	if s.push != nil {
		tcfg.PushGuard = s.push.guard
		tcfg.PushNotify = s.push.notify
	}
}

// pushOutbox is the runner's durable outbox; nil: none (no deliverer runs).
func (s *Server) pushOutbox() push.Outbox {
	return s.runner.PushOutbox()
}

var _ push.Observer = (*pushMetrics)(nil)

// pushMetrics are the delivery metrics; they implement push.Observer.
type pushMetrics struct {
	deliveries *prometheus.CounterVec
	seconds    prometheus.Histogram
	depth      prometheus.Gauge
	oldest     prometheus.Gauge
}

func newPushMetrics(reg *prometheus.Registry) *pushMetrics {
	m := &pushMetrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_push_deliveries_total", Help: "Push notification attempts, by outcome: delivered (2xx), retry (failed, tried again), refused (the SSRF guard refused the webhook), expired (failed past --push-retry-for).",
		}, []string{"outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gateway_push_delivery_seconds", Help: "Time one push notification attempt took, from the connection to the end of the answer.", Buckets: slowBuckets,
		}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_push_queue_depth", Help: "Push notifications not yet delivered nor given up, as last read from the outbox (at most 256).",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_push_oldest_undelivered_seconds", Help: "Age of the oldest push notification not yet delivered nor given up (0: none).",
		}),
	}
	reg.MustRegister(m.deliveries, m.seconds, m.depth, m.oldest)
	for _, o := range []push.Outcome{push.OutcomeDelivered, push.OutcomeRetry, push.OutcomeRefused, push.OutcomeExpired} {
		m.deliveries.WithLabelValues(string(o))
	}
	return m
}

// DeliveryDone implements push.Observer.
func (m *pushMetrics) DeliveryDone(o push.Outcome, d time.Duration) {
	m.deliveries.WithLabelValues(string(o)).Inc()
	if o != push.OutcomeRefused {
		m.seconds.Observe(d.Seconds())
	}
}

// QueueDepth implements push.Observer.
func (m *pushMetrics) QueueDepth(n int) { m.depth.Set(float64(n)) }

// OldestUndelivered implements push.Observer.
func (m *pushMetrics) OldestUndelivered(age time.Duration) { m.oldest.Set(age.Seconds()) }
