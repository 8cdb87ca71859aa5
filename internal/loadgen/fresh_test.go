package loadgen

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRun_FreshContexts checks that FreshContexts gives every request a contextId no
// other request of the run used, so that every request opens a new conversation.
func TestRun_FreshContexts(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		n    int
	)
	url := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := decodeRequest(t, r)
		id := req.Params.Message.ContextID
		mu.Lock()
		seen[id]++
		n++
		mu.Unlock()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"task","id":"t","contextId":%q,"status":{"state":"completed"}}}`, req.ID, id)
	}))
	r, err := Run(t.Context(), Config{URL: url, Concurrency: 3, Duration: 100 * time.Millisecond, FreshContexts: true, RunID: "fresh"})
	if err != nil || r.Errors != 0 {
		t.Fatalf("Run() = %d errors, error %v; want none", r.Errors, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n < 6 {
		t.Fatalf("server saw %d requests, want at least 6 (two per worker) for the check to mean something", n)
	}
	for id, k := range seen {
		if k != 1 || !strings.HasPrefix(id, "bench-fresh-n") {
			t.Errorf("contextId %q used %d times, want once with prefix bench-fresh-n", id, k)
		}
	}
}
