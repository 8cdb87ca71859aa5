package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// oaError writes an OpenAI error answer as the API does, with its retry headers.
func oaError(w http.ResponseWriter, code int, retryAfterMs string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if retryAfterMs != "" {
		w.Header().Set("retry-after-ms", retryAfterMs)
		w.Header().Set("retry-after", "1")
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
}

// oaStream writes a whole OpenAI stream of text.
func oaStream(w http.ResponseWriter, text string) {
	sseHeader(w)
	sse(w, oaRole, oaDelta(text), oaFinish, oaDone)
}

// TestOpenAIRetriesTransientRefusals: refusals that may pass (429 naming its wait, 5xx
// naming none, a connection dropped before an answer) are sent again, at most twice, and
// the reply that then comes is the turn's, emitted once; refusals that will not pass
// (400, 401, x-should-retry: false) are not retried.
func TestOpenAIRetriesTransientRefusals(t *testing.T) {
	t.Parallel()
	drop := func(w http.ResponseWriter) { // the connection closes before any answer
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	tests := []struct {
		name     string
		refuse   func(w http.ResponseWriter) // the answer of the refused attempts
		refusals int32                       // how many attempts are refused before a stream
		hits     int32                       // attempts the upstream sees
		wantErr  string                      // "" : the reply succeeds
		reasons  string                      // what OnRetry heard, joined by spaces
	}{
		{name: "429 with retry-after-ms, then a reply", refuse: func(w http.ResponseWriter) { oaError(w, 429, "5") }, refusals: 2, hits: 3, reasons: "429 429"},
		{name: "503 naming no wait, then a reply", refuse: func(w http.ResponseWriter) { oaError(w, 503, "") }, refusals: 1, hits: 2, reasons: "503"},
		{name: "connection dropped, then a reply", refuse: drop, refusals: 1, hits: 2, reasons: "connection"},
		{name: "500 three times", refuse: func(w http.ResponseWriter) { oaError(w, 500, "") }, refusals: 9, hits: 3, wantErr: "HTTP 500 (upstream error)"},
		{name: "400 not retried", refuse: func(w http.ResponseWriter) { oaError(w, 400, "") }, refusals: 9, hits: 1, wantErr: "HTTP 400 (request refused)"},
		{name: "401 not retried", refuse: func(w http.ResponseWriter) { oaError(w, 401, "") }, refusals: 9, hits: 1, wantErr: "HTTP 401 (authentication refused)"},
		{name: "x-should-retry false", refuse: func(w http.ResponseWriter) {
			w.Header().Set("x-should-retry", "false")
			oaError(w, 500, "")
		}, refusals: 9, hits: 1, wantErr: "HTTP 500"},
		{name: "x-should-retry true on a 400", refuse: func(w http.ResponseWriter) {
			w.Header().Set("x-should-retry", "true")
			oaError(w, 400, "")
		}, refusals: 1, hits: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t, func(u *upstream, w http.ResponseWriter, _ *http.Request) {
				if u.hits.Load() <= tt.refusals {
					tt.refuse(w)
					return
				}
				oaStream(w, "hello after the wait")
			})
			var reasons []string
			o, logs := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey, Timeout: 30 * time.Second,
				OnRetry: func(reason string) { reasons = append(reasons, reason) }})
			var got []string
			_, err := o.Reply(t.Context(), chatTurn, func(c string) error { got = append(got, c); return nil })
			if n := u.hits.Load(); n != tt.hits {
				t.Errorf("upstream saw %d attempts, want %d", n, tt.hits)
			}
			if tt.reasons != "" && strings.Join(reasons, " ") != tt.reasons {
				t.Errorf("OnRetry heard %q, want %q", reasons, tt.reasons)
			}
			if tt.wantErr != "" {
				if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Reply() error = %v, want %s (%v)", err, tt.wantErr, ErrBackend)
				}
				return
			}
			if err != nil {
				t.Fatalf("Reply() error = %v, want the reply after the retries", err)
			}
			if s := strings.Join(got, ""); s != "hello after the wait" {
				t.Errorf("emitted %q, want the reply once", s)
			}
			if !strings.Contains(logs.String(), "retrying the upstream request") {
				t.Errorf("log lacks the retry:\n%s", logs.String())
			}
		})
	}
}

// TestAnthropicRetriesOverloaded: Anthropic's 529 "overloaded_error" with its
// retry-after header is sent again after that wait.
func TestAnthropicRetriesOverloaded(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, func(u *upstream, w http.ResponseWriter, _ *http.Request) {
		if u.hits.Load() == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("retry-after", "0")
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		sseHeader(w)
		sse(w, anStream("fine now")...)
	})
	a, _ := newTestAnthropic(t, u, AnthropicConfig{APIKey: testKey, Timeout: 30 * time.Second})
	var got strings.Builder
	if _, err := a.Reply(t.Context(), chatTurn, func(c string) error { got.WriteString(c); return nil }); err != nil {
		t.Fatalf("Reply() error = %v", err)
	}
	if got.String() != "fine now" || u.hits.Load() != 2 {
		t.Errorf("emitted %q after %d attempts, want %q after 2", got.String(), u.hits.Load(), "fine now")
	}
}

// TestRetryWaitsItCannotAfford: a wait longer than maxRetryWait, or one past the turn's
// deadline, is not waited (the refusal ends the turn at once), and a turn cancelled
// while it waits ends with its context's error.
func TestRetryWaitsItCannotAfford(t *testing.T) {
	t.Parallel()
	refuse := func(retryAfter string) *upstream {
		return newUpstream(t, func(_ *upstream, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("retry-after", retryAfter)
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"message":"slow down","type":"requests"}}`)
		})
	}
	for _, tc := range []struct {
		name       string
		retryAfter string
		timeout    time.Duration
	}{
		{"an hour", "3600", time.Minute},
		{"past the deadline", "20", 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := refuse(tc.retryAfter)
			o, _ := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey, Timeout: tc.timeout})
			_, err := o.Reply(t.Context(), chatTurn, func(string) error { return nil })
			if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "HTTP 429") || u.hits.Load() != 1 {
				t.Errorf("Reply() = %v after %d attempts; want the 429 after 1", err, u.hits.Load())
			}
		})
	}
	t.Run("cancelled while waiting", func(t *testing.T) {
		t.Parallel()
		u := refuse("20")
		o, logs := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey, Timeout: time.Minute})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := o.Reply(ctx, chatTurn, func(string) error { return nil })
			done <- err
		}()
		for !strings.Contains(logs.String(), "retrying the upstream request") {
			select {
			case err := <-done:
				t.Fatalf("Reply() returned %v before waiting to retry", err)
			case <-time.After(time.Millisecond):
			}
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Reply() error = %v, want %v", err, context.Canceled)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"retry-after-ms": "250", "retry-after": "9"}, 250 * time.Millisecond, true},
		{map[string]string{"retry-after": "2"}, 2 * time.Second, true},
		{map[string]string{"retry-after": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"retry-after": "Wed, 02 Dec 2026 07:00:03 GMT"}, 3 * time.Second, true},
		{map[string]string{"retry-after": "Wed, 02 Dec 2026 06:00:00 GMT"}, 0, true},
		{map[string]string{"retry-after": "99999999999999"}, maxRetryWait + time.Second, true},
		{map[string]string{"retry-after": "soon"}, 0, false},
		{map[string]string{"retry-after-ms": "-1"}, 0, false},
		{map[string]string{}, 0, false},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got, ok := retryAfter(h, now); got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}
