package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// errEnoughSeen ends TestRun_FreshContexts's run once every worker has sent twice.
var errEnoughSeen = errors.New("every worker has sent two requests")

// TestRun_FreshContexts checks that FreshContexts gives every request a contextId no
// other request of the run used, so that every request opens a new conversation. The
// run ends when the server has seen two requests of every worker (a request's JSON-RPC
// id is seq×Concurrency + worker + 1, and its contextId ends in "-n<id>"), not after a
// fixed window: under two CPU burners a 100 ms window saw 5 requests (issue #35 item 10).
func TestRun_FreshContexts(t *testing.T) {
	t.Parallel()
	const concurrency = 3
	var (
		mu        sync.Mutex
		seen      = map[string]int{}
		perWorker [concurrency]int
	)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	url := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := decodeRequest(t, r)
		id := req.Params.Message.ContextID
		mu.Lock()
		seen[id]++
		_, n, _ := strings.Cut(id, "-n")
		if rpcID, err := strconv.Atoi(n); err == nil && rpcID >= 1 {
			perWorker[(rpcID-1)%concurrency]++
		}
		if min(perWorker[0], perWorker[1], perWorker[2]) >= 2 {
			cancel(errEnoughSeen)
		}
		mu.Unlock()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"task","id":"t","contextId":%q,"status":{"state":"completed"}}}`, req.ID, id)
	}))
	// The window is only an upper bound: the run ends when errEnoughSeen cancels it.
	r, err := Run(ctx, Config{URL: url, Concurrency: concurrency, Duration: time.Minute, FreshContexts: true, RunID: "fresh"})
	if !errors.Is(err, errEnoughSeen) || r.Errors != 0 {
		t.Fatalf("Run() = %d errors, error %v; want none, ended by %v", r.Errors, err, errEnoughSeen)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, k := range seen {
		if k != 1 || !strings.HasPrefix(id, "bench-fresh-n") {
			t.Errorf("contextId %q used %d times, want once with prefix bench-fresh-n", id, k)
		}
	}
}
