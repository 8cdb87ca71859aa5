package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

// failN counts n invalid tokens from source and returns how many of them reported the
// throttling.
func failN(l *authLimiter, source string, n int) int {
	hits := 0
	for range n {
		if l.fail(source) {
			hits++
		}
	}
	return hits
}

// TestAuthLimiterWindow checks the window logic on synctest's clock: max failures
// throttle a source for the rest of the window that began with its first failure, fewer
// do not, and the window's end forgets them.
func TestAuthLimiterWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, l *authLimiter)
	}{
		{"below the limit", func(t *testing.T, l *authLimiter) {
			failN(l, "a", 2)
			if _, ok := l.throttled("a"); ok {
				t.Errorf("throttled after 2 of 3 failures")
			}
		}},
		{"at the limit, reported once", func(t *testing.T, l *authLimiter) {
			if hits := failN(l, "a", 5); hits != 1 {
				t.Errorf("fail reported the throttling %d times, want 1", hits)
			}
			left, ok := l.throttled("a")
			if !ok || left != time.Minute {
				t.Errorf("throttled() = %v, %v; want true for the whole minute", left, ok)
			}
			if _, ok := l.throttled("b"); ok {
				t.Errorf("another source is throttled")
			}
		}},
		{"until the window ends", func(t *testing.T, l *authLimiter) {
			failN(l, "a", 1)
			time.Sleep(40 * time.Second)
			failN(l, "a", 2) // the third failure of the window that began 40 s ago
			if left, ok := l.throttled("a"); !ok || left != 20*time.Second {
				t.Errorf("throttled() = %v, %v; want true for the window's last 20s", left, ok)
			}
			time.Sleep(20 * time.Second)
			if _, ok := l.throttled("a"); ok {
				t.Errorf("still throttled when the window has ended")
			}
			if l.len() != 0 {
				t.Errorf("%d sources tracked after their window ended, want 0", l.len())
			}
		}},
		{"a new window starts from zero", func(t *testing.T, l *authLimiter) {
			failN(l, "a", 2)
			time.Sleep(time.Minute)
			failN(l, "a", 2)
			if _, ok := l.throttled("a"); ok {
				t.Errorf("throttled by 2 failures in each of two windows (limit 3 per window)")
			}
		}},
		{"memory is bounded", func(t *testing.T, l *authLimiter) {
			failN(l, "a", 3) // throttled...
			failN(l, "b", 1)
			failN(l, "c", 1) // ...and forgotten: size 2, a's last failure is the oldest
			if n := l.len(); n != 2 {
				t.Errorf("%d sources tracked, want the size 2", n)
			}
			if _, ok := l.throttled("a"); ok {
				t.Errorf("the evicted source is still throttled")
			}
			failN(l, "b", 2)
			if _, ok := l.throttled("b"); !ok {
				t.Errorf("a kept source lost its failures")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				tc.run(t, newAuthLimiter(3, time.Minute, 2))
			})
		})
	}
}

func TestAuthSource(t *testing.T) {
	t.Parallel()
	tests := []struct{ remote, want string }{
		{"192.0.2.7:5555", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.7]:80", "::ffff:192.0.2.7"},
		{"no-port", "no-port"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.RemoteAddr = tc.remote
		if got := authSource(r); got != tc.want {
			t.Errorf("authSource(%s) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

func TestTooManyFailuresRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		left time.Duration
		want string
	}{{59200 * time.Millisecond, "60"}, {time.Second, "1"}, {time.Millisecond, "1"}} {
		w := httptest.NewRecorder()
		tooManyFailures(w, tc.left)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != tc.want {
			t.Errorf("tooManyFailures(%v): %d, Retry-After %q; want 429, %q", tc.left, w.Code, w.Header().Get("Retry-After"), tc.want)
		}
	}
}
