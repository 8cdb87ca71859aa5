// Package push delivers A2A push notifications (DESIGN N-1): it takes deliveries from a
// durable outbox (implemented over the ledger by package turn), posts each to its
// webhook under the SSRF guard (the IP actually dialled is checked, no redirects, a body
// cap and a timeout), signs every request, retries with exponential backoff and jitter
// for a bounded time, keeps per-task order, and records every attempt back in the outbox.
//
// This file is the contract between the outbox (turn) and the deliverer (push); both
// sides build against it.
package push

import (
	"context"
	"time"
)

// Delivery is one notification waiting to be sent. The outbox creates it in the same
// ledger commit as the event it reports.
type Delivery struct {
	// ID is the stable event id, unique across the store and the same on every retry
	// and after a restart; it is sent in the payload's metadata and in the
	// X-A2A-Event-Id header so receivers can de-duplicate.
	ID string
	// TaskID and ContextID name the task the event belongs to; deliveries of one task
	// are sent in Seq order, one at a time.
	TaskID    string
	ContextID string
	// Seq orders deliveries within a task (the ledger seq of the outbox entry).
	Seq uint64
	// ConfigID is the push config the delivery was made for.
	ConfigID string
	// URL is the webhook, as the peer set it (checked again at every attempt).
	URL string
	// Token, if not empty, is sent as X-A2A-Notification-Token.
	Token string
	// AuthScheme and AuthCredentials, if AuthScheme is not empty, are sent as
	// "Authorization: <scheme> <credentials>" (the config's authentication).
	AuthScheme      string
	AuthCredentials string
	// ContentType is the body's media type: "application/a2a+json" for v1.0 configs,
	// "application/json" for v0.3.
	ContentType string
	// Body is the A2A payload, already encoded in the dialect of the peer that set the
	// config (v1.0: a StreamResponse; v0.3: the Task or the update event).
	Body []byte
	// Created is when the event was committed; the deliverer gives up at
	// Created + RetryFor.
	Created time.Time
	// Attempts is how many attempts were recorded before (a restart resumes the count),
	// and NextAt the earliest time of the next one (zero: now).
	Attempts int
	NextAt   time.Time
}

// Outcome is what one attempt came to.
type Outcome string

const (
	OutcomeDelivered Outcome = "delivered" // a 2xx answer: the delivery is done
	OutcomeRetry     Outcome = "retry"     // failed; tried again at Attempt.NextAt
	OutcomeRefused   Outcome = "refused"   // the guard refused the target: done, not sent
	OutcomeExpired   Outcome = "expired"   // failed and RetryFor has passed: given up
)

// Attempt records one try of a delivery.
type Attempt struct {
	At      time.Time
	Outcome Outcome
	Status  int           // the HTTP status, 0 if no response
	Latency time.Duration // from dial to the end of the response (or the failure)
	Error   string        // why it failed ("" when delivered)
	NextAt  time.Time     // for OutcomeRetry: when to try again
}

// Final reports whether the attempt ends the delivery (nothing more will be sent).
func (a Attempt) Final() bool { return a.Outcome != OutcomeRetry }

// Outbox is the durable queue the deliverer works from. It is implemented by package
// turn over the ledger (bbolt or Postgres), so that a delivery created with an event
// survives a crash and a restart resumes it.
type Outbox interface {
	// Pending returns up to limit deliveries that are not final, oldest first (per task
	// in Seq order). With a shared store each instance sees all of them; Claim decides
	// who sends.
	Pending(ctx context.Context, limit int) ([]Delivery, error)
	// Claim reports whether this instance may attempt d now (true on a single
	// instance); a false answer leaves d to another instance. The claim lasts until
	// Record or until the holder dies.
	Claim(ctx context.Context, d Delivery) (bool, error)
	// Record durably stores an attempt (an AUDIT_ONLY entry in the task's conversation,
	// plus the delivery's new state); after a Final attempt d is no longer Pending.
	Record(ctx context.Context, d Delivery, a Attempt) error
}
