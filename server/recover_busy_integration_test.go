//go:build integration

package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
)

// tryRPC posts a JSON-RPC body and decodes the response; unlike postRPC it reports a
// failure instead of ending the test, so goroutines may call it.
func tryRPC(t *testing.T, c *http.Client, url string, v1 bool, body string) (rpcResponse, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		return rpcResponse{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if v1 {
		req.Header.Set("A2A-Version", "1.0")
	}
	resp, err := c.Do(req)
	if err != nil {
		return rpcResponse{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return rpcResponse{}, err
	}
	var out rpcResponse
	if err := json.Unmarshal(b, &out); err != nil {
		return rpcResponse{}, fmt.Errorf("status %d, body %s: %w", resp.StatusCode, b, err)
	}
	return out, nil
}

// TestPostgresRecoverSweepNeverBusy (issue #35, 3): two instances on one PostgreSQL and
// one Redis, with a short lease TTL so that each sweeps for stopped turns every 300 ms,
// and sixteen workers, each sending turn after turn on its own context, alternating the
// instances. Every send follows the end of the previous one on an idle context, so none
// may be refused: before the fix, a sweep that had listed a running task took its lease
// (holder gateway-recover) just after the turn ended, and the next send was refused
// CONTEXT_BUSY naming gateway-recover (1 to 5 of 260 to 440 sends in each of five runs
// with 12 to 24 workers; six workers rarely hit the window: the deterministic test is
// turn's TestRecoverNeverMakesIdleContextBusy).
func TestPostgresRecoverSweepNeverBusy(t *testing.T) {
	url, addr := pgtest.Database(t), redistest.Start(t)
	const ttl = 300 * time.Millisecond
	cfg := func() Config {
		c := testConfig(t)
		c.Store, c.RedisAddr, c.LeaseTTL = url, addr, ttl
		return c
	}
	urls := []string{startServer(t, cfg()).URL(), startServer(t, cfg()).URL()}
	c := newHTTPClient(t)
	const (
		workers = 16
		runFor  = 3 * time.Second // ten sweeps of each instance
	)
	var (
		mu               sync.Mutex
		sends, refusals  int
		namedRecover     int
		firstRefusal     string
		wg               sync.WaitGroup
		end              = time.Now().Add(runFor)
		workerContextIDs = func(w int) string { return fmt.Sprintf("sweep-idle-%d", w) }
	)
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-%d-%d","contextId":%q,"parts":[{"kind":"text","text":"turn %d"}]}}}`,
					w, i, workerContextIDs(w), i)
				r, err := tryRPC(t, c, urls[(w+i)%2], false, body)
				if err != nil {
					t.Errorf("worker %d send %d: %v", w, i, err)
					return
				}
				mu.Lock()
				sends++
				if r.Error != nil {
					refusals++
					if strings.Contains(r.Error.Message+string(r.Error.Data), "gateway-recover") {
						namedRecover++
					}
					if firstRefusal == "" {
						firstRefusal = fmt.Sprintf("%d %s %s", r.Error.Code, r.Error.Message, r.Error.Data)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d sends by %d workers over %v (lease TTL %v, two instances sweeping): %d refused, %d naming gateway-recover",
		sends, workers, runFor, ttl, refusals, namedRecover)
	if refusals != 0 {
		t.Fatalf("%d of %d sends on idle contexts refused (%d naming gateway-recover); first: %s", refusals, sends, namedRecover, firstRefusal)
	}
}
