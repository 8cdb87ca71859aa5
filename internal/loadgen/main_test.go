package loadgen

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startServer serves h on a fresh 127.0.0.1 listener until the test ends
// and returns its URL.
func startServer(t *testing.T, h http.Handler) string {
	t.Helper()
	return serve(t, &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second})
}

// serve runs srv on a fresh 127.0.0.1 listener until the test ends and
// returns its URL.
func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen() error = %v, want nil", err)
	}
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
	return "http://" + ln.Addr().String() + "/"
}

// startBaseline runs StartBaseline for the duration of the test.
func startBaseline(t *testing.T) string {
	t.Helper()
	url, stop, err := StartBaseline(t.Context())
	if err != nil {
		t.Fatalf("StartBaseline() error = %v, want nil", err)
	}
	t.Cleanup(stop)
	return url
}

// checkPercentiles fails the test unless 0 < p50 <= p90 <= p99.
func checkPercentiles(t *testing.T, r Report) {
	t.Helper()
	if r.P50 <= 0 || r.P50 > r.P90 || r.P90 > r.P99 {
		t.Errorf("percentiles p50 %v, p90 %v, p99 %v; want 0 < p50 <= p90 <= p99", r.P50, r.P90, r.P99)
	}
}
