package server

import (
	"container/list"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Defaults of the authentication failure limiter.
const (
	// authFailMax failed tokens from one source within authFailWindow throttle it for the
	// rest of the window: a peer with a stale token gets well past a retry loop's first
	// attempts, a guesser gets 20 guesses a minute per address.
	authFailMax    = 20
	authFailWindow = time.Minute
	// authFailSources bounds the sources tracked (~150 B each: ~1.5 MB at most). When it
	// is full, the source whose last failure is oldest is forgotten.
	authFailSources = 10_000
)

// authLimiter counts invalid bearer tokens per source (the remote IP) in fixed windows:
// after max failures within window, the source is throttled until its window ends, and
// its requests are answered 429 with Retry-After without their token being compared
// (whatever the token). Memory is bounded: at most size sources are tracked, the one whose
// last failure is oldest evicted first, and an expired entry is dropped when next seen.
// Behind a reverse proxy every client shares the proxy's address, and so its window.
//
// An authLimiter is safe for concurrent use.
type authLimiter struct {
	max    int
	window time.Duration
	size   int

	mu      sync.Mutex
	sources map[string]*list.Element // of *authFailures
	lru     list.List                // front: the most recent failure
}

// authFailures is one source's current window.
type authFailures struct {
	source string
	start  time.Time // the window's first failure
	count  int
}

func newAuthLimiter(max int, window time.Duration, size int) *authLimiter {
	return &authLimiter{max: max, window: window, size: size, sources: make(map[string]*list.Element)}
}

// throttled reports whether source is throttled now, and for how long still.
func (l *authLimiter) throttled(source string) (time.Duration, bool) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.sources[source]
	if !ok {
		return 0, false
	}
	f := e.Value.(*authFailures)
	left := f.start.Add(l.window).Sub(now)
	if left <= 0 {
		l.lru.Remove(e)
		delete(l.sources, source)
		return 0, false
	}
	return left, f.count >= l.max
}

// fail counts an invalid token from source, and reports whether it is the failure that
// throttles the source (once per window, for the log).
func (l *authLimiter) fail(source string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.sources[source]
	if !ok {
		if l.lru.Len() >= l.size {
			oldest := l.lru.Back()
			l.lru.Remove(oldest)
			delete(l.sources, oldest.Value.(*authFailures).source)
		}
		e = l.lru.PushFront(&authFailures{source: source, start: now})
		l.sources[source] = e
	}
	l.lru.MoveToFront(e)
	f := e.Value.(*authFailures)
	if now.Sub(f.start) >= l.window {
		f.start, f.count = now, 0
	}
	f.count++
	return f.count == l.max
}

// len is the number of sources tracked.
func (l *authLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}

// authThrottled answers 429 to a request whose source is throttled, without looking at
// its token, and reports whether it did.
func (s *Server) authThrottled(w http.ResponseWriter, r *http.Request) bool {
	left, throttled := s.authFails.throttled(authSource(r))
	if !throttled {
		return false
	}
	s.metrics.authFailure("throttled")
	tooManyFailures(w, left)
	return true
}

// authFailed counts an invalid token against its source (authSource), and logs when that
// throttles the source.
func (s *Server) authFailed(ctx context.Context, src string, log *slog.Logger) {
	if s.authFails.fail(src) {
		log.WarnContext(ctx, "throttling a source after too many invalid tokens", "source", src,
			"failures", s.authFails.max, "window", s.authFails.window.String())
	}
}

// authSource is the source a request's failures count against: its remote IP (a proxy's
// forwarding headers are not trusted: a client could name any address in them).
func authSource(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		return host
	}
	// An IPv6 client usually holds a whole /64: count it as one source.
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// tooManyFailures answers a throttled source: 429 with Retry-After (whole seconds, rounded
// up) and a generic line that names no peer.
func tooManyFailures(w http.ResponseWriter, left time.Duration) {
	secs := int((left + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// The body is not read: closing the connection lets the answer go out at once instead
	// of after net/http drained a (possibly slow) body.
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte("too many failed authentication attempts from this address; retry after " + strconv.Itoa(secs) + "s\n"))
}
