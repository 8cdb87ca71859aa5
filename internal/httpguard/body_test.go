package httpguard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// cutServer serves l-guarded requests whose handler reads the whole body and answers
// 200 "<n bytes>", or 408 with the *BodyError's bound ("rate" or "whole") when cut.
func cutServer(t *testing.T, l BodyLimits) string {
	t.Helper()
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var be *BodyError
		switch {
		case errors.As(err, &be):
			if !errors.Is(err, ErrSlowBody) || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("cut error %v does not wrap ErrSlowBody and os.ErrDeadlineExceeded", err)
			}
			bound := "whole"
			if be.Rate {
				bound = "rate"
			}
			w.Header().Set("Connection", "close")
			http.Error(w, bound, http.StatusRequestTimeout)
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
		default:
			fmt.Fprintf(w, "%d", len(b))
		}
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// trickle sends a POST with Content-Length size to addr, then the body in chunks of
// chunk bytes every every (0: nothing after burst), after an initial burst of burst
// bytes; it returns the status line and body of the answer and the time from the end
// of the headers (the wait is bounded by 10 s).
func trickle(t *testing.T, addr string, size, burst, chunk int, every time.Duration) (string, time.Duration) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", addr, size, strings.Repeat("x", burst))
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if every > 0 {
		wg.Go(func() { // exits when stop is closed or the body is complete
			tick := time.NewTicker(every)
			defer tick.Stop()
			for sent := burst; sent < size; sent += chunk {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte(strings.Repeat("x", min(chunk, size-sent)))); err != nil {
						return
					}
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	_ = c.SetReadDeadline(start.Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "no answer: " + err.Error(), time.Since(start)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b))), time.Since(start)
}

// TestBodyLimits runs bodies at different paces against the bounds (over real TCP):
// the whole-body bound and the rate bound cut at their deadline (± scheduling), bodies
// that keep the rate pass even when they take longer than the grace.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		limits              BodyLimits
		size, burst, chunk  int
		every               time.Duration
		want                string
		notBefore, notAfter time.Duration
	}{
		{"silent, whole bound", BodyLimits{Timeout: 500 * time.Millisecond}, 100, 0, 0, 0, "408 whole", 450 * time.Millisecond, 1500 * time.Millisecond},
		{"silent, rate bound", BodyLimits{Timeout: 5 * time.Second, MinRate: 1000, Grace: 300 * time.Millisecond}, 100, 0, 0, 0, "408 rate", 250 * time.Millisecond, 1300 * time.Millisecond},
		{"1 byte per 100ms, rate bound", BodyLimits{Timeout: 5 * time.Second, MinRate: 1000, Grace: 300 * time.Millisecond}, 100, 0, 1, 100 * time.Millisecond, "408 rate", 250 * time.Millisecond, 1300 * time.Millisecond},
		{"burst then stall: credit, then cut", BodyLimits{Timeout: 5 * time.Second, MinRate: 1000, Grace: 300 * time.Millisecond}, 2000, 500, 0, 0, "408 rate", 750 * time.Millisecond, 1800 * time.Millisecond},
		{"keeps the rate past the grace", BodyLimits{Timeout: 5 * time.Second, MinRate: 1000, Grace: 300 * time.Millisecond}, 3000, 0, 500, 100 * time.Millisecond, "200 3000", 500 * time.Millisecond, 3 * time.Second},
		{"keeps the rate, hits the whole bound", BodyLimits{Timeout: 800 * time.Millisecond, MinRate: 1000, Grace: 300 * time.Millisecond}, 100000, 0, 500, 100 * time.Millisecond, "408 whole", 750 * time.Millisecond, 1800 * time.Millisecond},
		{"at full speed", BodyLimits{Timeout: 500 * time.Millisecond, MinRate: 1 << 20}, 1 << 20, 1 << 20, 0, 0, "200 1048576", 0, 500 * time.Millisecond},
		{"no bounds", BodyLimits{}, 100, 100, 0, 0, "200 100", 0, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, took := trickle(t, cutServer(t, tc.limits), tc.size, tc.burst, tc.chunk, tc.every)
			t.Logf("%s after %v", got, took)
			if got != tc.want || took < tc.notBefore || took > tc.notAfter {
				t.Errorf("answer %q after %v, want %q after %v to %v", got, took, tc.want, tc.notBefore, tc.notAfter)
			}
		})
	}
}

// TestBodyLimitsLiftedAfterBody: once the body is read, no deadline of the guard is
// left on the connection: a response that streams for several times the bound reaches
// its end, and the request's context stays alive (net/http cancels it when a read
// deadline passes). net/http clears the read deadline itself when it starts its
// background read at the end of the body; the guard lifts it too and must never set it
// again after the end.
func TestBodyLimitsLiftedAfterBody(t *testing.T) {
	t.Parallel()
	const bound = 300 * time.Millisecond
	h := BodyLimits{Timeout: bound, MinRate: 1000, Grace: bound}.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			t.Errorf("reading the body: %v", err)
			return
		}
		tick := time.NewTicker(bound / 3)
		defer tick.Stop()
		for i := range 12 { // 4 bounds long
			select {
			case <-r.Context().Done():
				t.Errorf("the request's context ended after %d chunks: %v", i, r.Context().Err())
				return
			case <-tick.C:
			}
			fmt.Fprintf(w, "chunk %d\n", i)
			_ = http.NewResponseController(w).Flush()
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL, "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasSuffix(string(b), "chunk 11\n") {
		t.Errorf("streamed response %q, err %v, want 12 chunks", b, err)
	}
}

// TestBodyLimitsUnsupportedWriter: a ResponseWriter that cannot set deadlines (the
// test recorder) leaves the body as it is.
func TestBodyLimitsUnsupportedWriter(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("body"))
	body := r.Body
	BodyLimits{Timeout: time.Second}.Guard(httptest.NewRecorder(), r)
	if r.Body != body {
		t.Errorf("Guard replaced the body of a request it cannot bound")
	}
}
