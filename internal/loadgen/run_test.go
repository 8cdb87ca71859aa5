package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

func TestRun_Baseline(t *testing.T) {
	t.Parallel()
	url := startBaseline(t)
	tests := []struct {
		name    string
		dialect Dialect
		stream  bool
		rest    bool
	}{
		{name: "HTTP+JSON send", rest: true},
		{name: "v0.3 send", dialect: DialectV03},
		{name: "v0.3 stream", dialect: DialectV03, stream: true},
		{name: "v1.0 send", dialect: DialectV10},
		{name: "v1.0 stream", dialect: DialectV10, stream: true},
		{name: "default dialect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, cfg, err := runCounted(t, Config{
				URL:         url,
				Concurrency: 4,
				Duration:    150 * time.Millisecond,
				Warmup:      20 * time.Millisecond,
				Dialect:     tt.dialect,
				Stream:      tt.stream,
				HTTPJSON:    tt.rest,
			})
			if err != nil {
				t.Fatalf("Run() error = %v, want nil", err)
			}
			if r.Requests == 0 || r.Errors != 0 || len(r.ErrorsByCode) != 0 {
				t.Fatalf("Run() = %d requests, %d errors %v; want > 0 requests and no errors", r.Requests, r.Errors, r.ErrorsByCode)
			}
			if r.Duration != cfg.Duration {
				t.Errorf("Run() Duration = %v, want %v", r.Duration, cfg.Duration)
			}
			if want := float64(r.Requests) / r.Duration.Seconds(); r.RPS != want {
				t.Errorf("Run() RPS = %v, want %v", r.RPS, want)
			}
			checkPercentiles(t, r)
			if tt.stream {
				if r.TTFBP50 <= 0 || r.TTFBP50 > r.TTFBP99 || r.TTFBP50 > r.P50 {
					t.Errorf("first event p50 %v, p99 %v (latency p50 %v); want 0 < p50 <= p99 and p50 <= latency p50", r.TTFBP50, r.TTFBP99, r.P50)
				}
			} else if r.TTFBP50 != 0 || r.TTFBP99 != 0 {
				t.Errorf("first event p50 %v, p99 %v without streaming; want 0", r.TTFBP50, r.TTFBP99)
			}
		})
	}
}

// runCounted is Run(t.Context(), cfg), again with twice the window while no request
// completed inside it (a busy machine can deschedule the workers for a whole short
// window), up to the test's hang guard. before, if given, runs before each Run, so that
// what a test counts on its server is the last run's alone. It returns the config of the
// last run.
func runCounted(t *testing.T, cfg Config, before ...func()) (Report, Config, error) {
	t.Helper()
	guard := testutil.Deadline(t)
	for {
		for _, f := range before {
			f()
		}
		r, err := Run(t.Context(), cfg)
		if err != nil || r.Requests > 0 || time.Now().After(guard) {
			return r, cfg, err
		}
		t.Logf("no request completed in a %v window; again with twice the window", cfg.Duration)
		cfg.Duration *= 2
	}
}

func TestRun_ReusesConnections(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			var conns atomic.Int64
			url := serve(t, &http.Server{
				Handler:           &baselineHandler{},
				ReadHeaderTimeout: 5 * time.Second,
				ConnState: func(_ net.Conn, s http.ConnState) {
					if s == http.StateNew {
						conns.Add(1)
					}
				},
			})
			const concurrency = 4
			// The connections of a run that completed nothing (and is run again) are not
			// counted: under load they were cut at its window's end.
			r, _, err := runCounted(t, Config{URL: url, Concurrency: concurrency, Duration: 150 * time.Millisecond, Stream: stream},
				func() { conns.Store(0) })
			if err != nil || r.Errors != 0 {
				t.Fatalf("Run() = %d errors, error %v; want none", r.Errors, err)
			}
			if n := conns.Load(); n > concurrency {
				t.Errorf("Run() opened %d connections for %d requests, want at most %d (keep-alive)", n, r.Requests, concurrency)
			}
		})
	}
}

// rpcRequest decodes the fields of a load generator request the test
// servers look at.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Message struct {
			ContextID string `json:"contextId"`
		} `json:"message"`
	} `json:"params"`
}

func decodeRequest(t *testing.T, r *http.Request) rpcRequest {
	var req rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		t.Errorf("server: decode request: %v", err)
	}
	return req
}

func TestRun_ErrorsByCode(t *testing.T) {
	t.Parallel()
	okTask := `{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}`
	tests := []struct {
		name   string
		stream bool
		// answer writes the reply to the n-th request (n from 1); odd n fail.
		answer  func(w http.ResponseWriter, id json.RawMessage, n int64)
		wantKey string
	}{{
		name:    "json-rpc error",
		wantKey: "-32004",
		answer: func(w http.ResponseWriter, id json.RawMessage, n int64) {
			w.Header().Set("Content-Type", "application/json")
			if n%2 == 1 {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32004,"message":"context busy"}}`, id)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, okTask)
		},
	}, {
		name:    "http status",
		wantKey: "http 503",
		answer: func(w http.ResponseWriter, id json.RawMessage, n int64) {
			if n%2 == 1 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, okTask)
		},
	}, {
		name:    "null result",
		wantKey: ErrKeyInvalid,
		answer: func(w http.ResponseWriter, id json.RawMessage, n int64) {
			if n%2 == 1 {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":null}`, id)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, okTask)
		},
	}, {
		name:    "stream error frame",
		stream:  true,
		wantKey: "-32004",
		answer: func(w http.ResponseWriter, id json.RawMessage, n int64) {
			w.Header().Set("Content-Type", "text/event-stream")
			if n%2 == 1 {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32004,\"message\":\"busy\"}}\n\n", id)
				return
			}
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, okTask)
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"kind\":\"status-update\",\"taskId\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"completed\"},\"final\":true}}\n\n", id)
		},
	}, {
		name:    "stream refused before opening",
		stream:  true,
		wantKey: "-32004",
		answer: func(w http.ResponseWriter, id json.RawMessage, n int64) {
			if n%2 == 1 {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32004,"message":"busy"}}`, id)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, okTask)
		},
	}, {
		name:    "empty stream",
		stream:  true,
		wantKey: ErrKeyInvalid,
		answer: func(w http.ResponseWriter, id json.RawMessage, n int64) {
			w.Header().Set("Content-Type", "text/event-stream")
			if n%2 == 1 {
				io.WriteString(w, ": keep-alive\n\n")
				return
			}
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, okTask)
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int64
			url := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req := decodeRequest(t, r)
				tt.answer(w, req.ID, n.Add(1))
			}))
			const concurrency = 4
			r, _, err := runCounted(t, Config{URL: url, Concurrency: concurrency, Duration: 150 * time.Millisecond, Stream: tt.stream})
			if err != nil {
				t.Fatalf("Run() error = %v, want nil", err)
			}
			if r.Errors == 0 || r.ErrorsByCode[tt.wantKey] != r.Errors || len(r.ErrorsByCode) != 1 {
				t.Fatalf("Run() errors = %d %v, want all under %q", r.Errors, r.ErrorsByCode, tt.wantKey)
			}
			// The server alternates, so successes and failures differ only
			// by the requests cut off at the window's edges.
			if ok := r.Requests - r.Errors; ok-r.Errors > 2*concurrency || r.Errors-ok > 2*concurrency {
				t.Errorf("Run() = %d ok and %d failed, want about half each", ok, r.Errors)
			}
			checkPercentiles(t, r)
			if r.ErrorP50 <= 0 || r.ErrorP50 > r.ErrorP99 {
				t.Errorf("error p50 %v, p99 %v; want 0 < p50 <= p99", r.ErrorP50, r.ErrorP99)
			}
		})
	}
}

func TestRun_TransportErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		stream  bool
		timeout time.Duration
		wantKey string
	}{{
		name: "connection dropped",
		handler: func(w http.ResponseWriter, r *http.Request) {
			panic(http.ErrAbortHandler) // closes the connection without an answer
		},
		wantKey: ErrKeyTransport,
	}, {
		name: "slower than the timeout",
		handler: func(w http.ResponseWriter, r *http.Request) {
			// Reading the body lets the server notice the client leaving.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		},
		timeout: 20 * time.Millisecond,
		wantKey: ErrKeyTimeout,
	}, {
		name: "stream stalls after its first event",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"task\"}}\n\n")
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		},
		stream:  true,
		timeout: 20 * time.Millisecond,
		wantKey: ErrKeyTimeout,
	}, {
		name: "stream broken after its first event",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"task\"}}\n\n")
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		},
		stream:  true,
		wantKey: ErrKeyTransport,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := startServer(t, tt.handler)
			r, _, err := runCounted(t, Config{URL: url, Concurrency: 2, Duration: 150 * time.Millisecond, Timeout: tt.timeout, Stream: tt.stream})
			if err != nil {
				t.Fatalf("Run() error = %v, want nil", err)
			}
			if r.Errors == 0 || r.Errors != r.Requests || r.ErrorsByCode[tt.wantKey] != r.Errors {
				t.Errorf("Run() = %d requests, errors %v; want all failed under %q", r.Requests, r.ErrorsByCode, tt.wantKey)
			}
		})
	}
}

func TestRun_Contexts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		concurrency, contexts int
		wantIDs               int
	}{
		{name: "default is one per worker", concurrency: 6, contexts: 0, wantIDs: 6},
		{name: "as many as workers", concurrency: 6, contexts: 6, wantIDs: 6},
		{name: "more than workers", concurrency: 4, contexts: 11, wantIDs: 11},
		{name: "one shared", concurrency: 4, contexts: 1, wantIDs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu       sync.Mutex
				inFlight = map[string]int{}
				seen     = map[string]int{}
				overlaps int
				arrivals atomic.Int64 // requests the server has received
			)
			// The server refuses a second request on a busy contextId, like
			// a gateway that runs one task per context.
			url := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req := decodeRequest(t, r)
				id := req.Params.Message.ContextID
				arrivals.Add(1)
				mu.Lock()
				seen[id]++
				busy := inFlight[id] > 0
				if busy {
					overlaps++
				} else {
					inFlight[id]++
				}
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				if busy {
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32004,"message":"context busy"}}`, req.ID)
					return
				}
				// A turn lasts until the server has seen another request (or the run
				// is over): workers sharing a contextId are then sure to overlap (the
				// refusals counted below), and the others never wait on each other.
				mine := arrivals.Load()
				testutil.Until(testutil.Deadline(t), func() bool { return arrivals.Load() > mine || r.Context().Err() != nil })
				mu.Lock()
				inFlight[id]--
				mu.Unlock()
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"task","id":"t","contextId":%q,"status":{"state":"completed"}}}`, req.ID, id)
			}))
			r, _, err := runCounted(t, Config{
				URL:         url,
				Concurrency: tt.concurrency,
				Contexts:    tt.contexts,
				Duration:    200 * time.Millisecond,
				RunID:       "ctxtest",
			})
			if err != nil {
				t.Fatalf("Run() error = %v, want nil", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != tt.wantIDs {
				t.Errorf("server saw %d contextIds %v, want %d", len(seen), seen, tt.wantIDs)
			}
			for id := range seen {
				if !strings.HasPrefix(id, "bench-ctxtest-") {
					t.Errorf("contextId %q, want prefix %q", id, "bench-ctxtest-")
				}
			}
			if tt.wantIDs >= tt.concurrency {
				if overlaps != 0 || r.Errors != 0 {
					t.Errorf("%d requests overlapped on a contextId (%v errors), want 0", overlaps, r.ErrorsByCode)
				}
				return
			}
			if r.ErrorsByCode["-32004"] == 0 {
				t.Errorf("Run() ErrorsByCode = %v with %d workers on one contextId, want -32004 refusals", r.ErrorsByCode, tt.concurrency)
			}
		})
	}
}

func TestRun_InvalidConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{name: "no URL", cfg: Config{}},
		{name: "not http", cfg: Config{URL: "ftp://127.0.0.1/"}},
		{name: "no host", cfg: Config{URL: "http:///x"}},
		{name: "negative concurrency", cfg: Config{URL: "http://127.0.0.1:1/", Concurrency: -1}},
		{name: "negative duration", cfg: Config{URL: "http://127.0.0.1:1/", Duration: -time.Second}},
		{name: "negative warmup", cfg: Config{URL: "http://127.0.0.1:1/", Warmup: -time.Second}},
		{name: "unknown dialect", cfg: Config{URL: "http://127.0.0.1:1/", Dialect: "2.0"}},
		{name: "negative contexts", cfg: Config{URL: "http://127.0.0.1:1/", Contexts: -2}},
		{name: "negative timeout", cfg: Config{URL: "http://127.0.0.1:1/", Timeout: -1}},
		{name: "run id with quotes", cfg: Config{URL: "http://127.0.0.1:1/", RunID: `a"b`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Run(t.Context(), tt.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Run(%+v) error = %v, want %v", tt.cfg, err, ErrInvalidConfig)
			}
			if _, err := Compare(t.Context(), tt.cfg, 1); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Compare(%+v) error = %v, want %v", tt.cfg, err, ErrInvalidConfig)
			}
		})
	}
}

func TestRun_Cancel(t *testing.T) {
	t.Parallel()
	url := startBaseline(t)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := Run(ctx, Config{URL: url, Concurrency: 2, Duration: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run() error = %v, want %v", err, context.DeadlineExceeded)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Run() returned after %v, want soon after the cancel", elapsed)
	}
	if r.Requests == 0 || r.Duration <= 0 || r.Duration > time.Second {
		t.Errorf("Run() partial report = %d requests over %v, want > 0 over about 100ms", r.Requests, r.Duration)
	}
}
