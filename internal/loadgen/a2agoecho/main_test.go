package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/a2a-gateway/gateway/internal/loadgen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startEcho serves newHandler on a fresh 127.0.0.1 listener until the test ends and
// returns its URL.
func startEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen() error = %v, want nil", err)
	}
	url := "http://" + ln.Addr().String() + "/"
	srv := &http.Server{Handler: newHandler(url), ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) }) // exits at Shutdown in the cleanup
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		wg.Wait()
	})
	return url
}

// TestEchoAnswersTheBenchLoad runs the repo's load generator against the a2a-go echo
// the way scripts/bench.sh does, so that the bench wiring cannot rot: message/send
// (v0.3) succeeds with fresh and with long-lived contexts; SendMessage (v1.0) is not
// spoken by a2a-go v0.3.3 and gets -32601 every time.
func TestEchoAnswersTheBenchLoad(t *testing.T) {
	t.Parallel()
	url := startEcho(t)
	tests := []struct {
		name       string
		cfg        loadgen.Config
		wantErrors map[string]bool // error keys allowed; none: every request succeeds
	}{
		{"v0.3 fresh contexts", loadgen.Config{Dialect: loadgen.DialectV03, Concurrency: 2, FreshContexts: true}, nil},
		{"v0.3 long-lived contexts", loadgen.Config{Dialect: loadgen.DialectV03, Concurrency: 2, Contexts: 4}, nil},
		{"v1.0 not spoken", loadgen.Config{Dialect: loadgen.DialectV10, Concurrency: 1}, map[string]bool{"-32601": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.URL, cfg.Duration = url, 200*time.Millisecond
			r, err := loadgen.Run(t.Context(), cfg)
			if err != nil {
				t.Fatalf("Run() error = %v, want nil", err)
			}
			if r.Requests == 0 {
				t.Fatal("Run() completed no request")
			}
			if tt.wantErrors == nil {
				if diff := cmp.Diff(map[string]int{}, r.ErrorsByCode); diff != "" || r.Errors != 0 {
					t.Fatalf("Run() errors %d (-want +got):\n%s", r.Errors, diff)
				}
				return
			}
			if r.Errors != r.Requests {
				t.Errorf("Run() errors = %d of %d requests, want all", r.Errors, r.Requests)
			}
			for k := range r.ErrorsByCode {
				if !tt.wantErrors[k] {
					t.Errorf("Run() error key %q, want only %v", k, tt.wantErrors)
				}
			}
		})
	}
}

// TestRunStopsWithItsContext checks that run serves until its context ends and then
// returns nil.
func TestRunStopsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0") }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run() error = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run() did not return after its context ended")
	}
}
