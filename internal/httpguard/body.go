package httpguard

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// DefaultGrace is the time a body has before [BodyLimits.MinRate] applies, when
// BodyLimits.Grace is 0: long enough for TCP to retransmit a lost segment a few times.
const DefaultGrace = 5 * time.Second

// ErrSlowBody is the error every [*BodyError] wraps.
var ErrSlowBody = errors.New("request body not received in time")

// BodyError is the error a guarded body's Read returns once a bound is hit; it wraps
// [ErrSlowBody] and [os.ErrDeadlineExceeded] (what net/http's own read timeouts wrap),
// and reports Timeout() true, like a net.Error.
type BodyError struct {
	Received int64         // bytes of the body read before the cut
	After    time.Duration // from the start of the request's handling to the cut
	Rate     bool          // true: the minimum rate was not kept; false: the whole-body bound
}

// Error says after how long and how many bytes the body was cut, and which bound.
func (e *BodyError) Error() string {
	bound := "the whole-body bound"
	if e.Rate {
		bound = "the minimum rate"
	}
	return fmt.Sprintf("request body cut after %v and %d bytes: %s was not kept", e.After.Round(time.Millisecond), e.Received, bound)
}

// Unwrap returns ErrSlowBody and os.ErrDeadlineExceeded.
func (e *BodyError) Unwrap() []error { return []error{ErrSlowBody, os.ErrDeadlineExceeded} }

// Timeout reports true: a cut body is a timeout.
func (e *BodyError) Timeout() bool { return true }

// BodyLimits bounds reading request bodies. The zero value bounds nothing.
type BodyLimits struct {
	// Timeout bounds reading one whole body, counted from the start of the request's
	// handling (its headers have been read by then); 0: no whole-body bound.
	Timeout time.Duration
	// MinRate is the least average rate, in bytes per second, at which a body must
	// arrive once Grace has passed: Grace + n/MinRate after the start, more than n bytes
	// must have arrived (the rule of Apache's mod_reqtimeout); 0: no rate bound.
	MinRate int
	// Grace is the time before MinRate applies; 0: DefaultGrace.
	Grace time.Duration
	// OnCut, when set, is called once for every body cut, from the handler's goroutine
	// (a log line, a counter); it must not block.
	OnCut func(r *http.Request, err *BodyError)
}

func (l BodyLimits) enabled() bool { return l.Timeout > 0 || l.MinRate > 0 }

// Handler returns next with every request body bounded by l (see [BodyLimits.Guard]).
func (l BodyLimits) Handler(next http.Handler) http.Handler {
	if !l.enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.Guard(w, r)
		next.ServeHTTP(w, r)
	})
}

// Guard bounds the reading of r's body by l, in place (r.Body is replaced, as with
// http.MaxBytesReader): it sets the connection's read deadline to where the bounds
// would be broken, moves it as bytes arrive, and lifts it at the end of the body. A
// body the handler leaves unread stays bounded while the server drains it after the
// handler. Requests without a body, and ResponseWriters that cannot set deadlines
// (httptest's recorder), are left as they are.
func (l BodyLimits) Guard(w http.ResponseWriter, r *http.Request) {
	if !l.enabled() || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	g := &guardedBody{src: r.Body, limits: l, rc: http.NewResponseController(w), req: r, start: time.Now()}
	if g.limits.Grace <= 0 {
		g.limits.Grace = DefaultGrace
	}
	if err := g.arm(); err != nil {
		return // errors.Is(err, http.ErrNotSupported): not a connection we can bound
	}
	r.Body = g
}

// guardedBody is a request body read under BodyLimits; only the handler's goroutine
// reads it.
type guardedBody struct {
	src      io.ReadCloser
	limits   BodyLimits
	rc       *http.ResponseController
	req      *http.Request
	start    time.Time
	received int64
	deadline time.Time // the connection's read deadline as last set
	rateCut  bool      // the deadline is the rate bound's (not the whole-body bound's)
	err      error     // sticky: the cut, or the end of the body
}

// bound returns the read deadline for the bytes received so far, and whether it is
// the rate bound's.
func (g *guardedBody) bound() (time.Time, bool) {
	var whole, rate time.Time
	if g.limits.Timeout > 0 {
		whole = g.start.Add(g.limits.Timeout)
	}
	if g.limits.MinRate > 0 {
		credit := time.Duration(float64(g.received) / float64(g.limits.MinRate) * float64(time.Second))
		rate = g.start.Add(g.limits.Grace + credit)
	}
	switch {
	case rate.IsZero():
		return whole, false
	case whole.IsZero() || rate.Before(whole):
		return rate, true
	}
	return whole, false
}

// arm sets the connection's read deadline for the bytes received so far.
func (g *guardedBody) arm() error {
	d, rate := g.bound()
	if d.Equal(g.deadline) {
		return nil
	}
	if err := g.rc.SetReadDeadline(d); err != nil {
		return err
	}
	g.deadline, g.rateCut = d, rate
	return nil
}

// Read reads the body; once a bound is hit it returns a *BodyError, at the end of the
// body it lifts the read deadline (an SSE response must not be cut by it).
func (g *guardedBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.src.Read(p)
	g.received += int64(n)
	switch {
	case err == nil:
		if aerr := g.arm(); aerr != nil {
			g.err = aerr
			return n, aerr
		}
	case errors.Is(err, io.EOF):
		g.err = err
		_ = g.rc.SetReadDeadline(time.Time{}) // the connection is gone if this fails
	case errors.Is(err, os.ErrDeadlineExceeded):
		be := &BodyError{Received: g.received, After: time.Since(g.start), Rate: g.rateCut}
		g.err = be
		if g.limits.OnCut != nil {
			g.limits.OnCut(g.req, be)
		}
		return n, be
	default:
		g.err = err
	}
	return n, err
}

// Close closes the underlying body.
func (g *guardedBody) Close() error { return g.src.Close() }
