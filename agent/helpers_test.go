package agent

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// logBuffer collects a logger's output; safe for concurrent use.
type logBuffer = testutil.LogBuffer

func testLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// upstream is a fake provider on 127.0.0.1 that records the requests it got.
type upstream struct {
	*httptest.Server
	hits    atomic.Int32
	mu      sync.Mutex
	body    []byte
	header  http.Header
	path    string
	release chan struct{} // closed when the test ends: handlers that hang return
}

// newUpstream starts a server whose handler is h; it is closed when the test ends, after
// hanging handlers were released.
func newUpstream(t *testing.T, h func(u *upstream, w http.ResponseWriter, r *http.Request)) *upstream {
	t.Helper()
	u := &upstream{release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.body, u.header, u.path = body, r.Header.Clone(), r.URL.Path
		u.mu.Unlock()
		h(u, w, r)
	}))
	t.Cleanup(u.Close)
	t.Cleanup(func() { close(u.release) })
	return u
}

// request is the last request's path, headers and body.
func (u *upstream) request() (string, http.Header, []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.path, u.header, u.body
}

// hang blocks until the client goes away or the test ends.
func (u *upstream) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-u.release:
	}
}

// sse writes the stream's events one by one, flushing each, as the providers do.
func sse(w http.ResponseWriter, events ...string) {
	for _, e := range events {
		io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}
