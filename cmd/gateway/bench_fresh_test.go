package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestBenchFreshContexts: --fresh-contexts sends every request with a contextId of its
// own and says so in the settings; it does not combine with --contexts.
func TestBenchFreshContexts(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen = map[string]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Message struct {
					ContextID string `json:"contextId"`
				} `json:"message"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen[req.Params.Message.ContextID]++
		mu.Unlock()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"message","messageId":"m","role":"agent","parts":[]}}`, req.ID)
	}))
	t.Cleanup(srv.Close)

	var stdout, stderr bytes.Buffer
	args := []string{"--fresh-contexts", "--concurrency", "2", "--duration", "150ms", "--warmup", "0s", "--json", srv.URL + "/"}
	if err := runBench(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("runBench(%q) error = %v, want nil; stderr %s", args, err, stderr.String())
	}
	var out struct {
		Config struct {
			Fresh bool `json:"fresh_contexts"`
		} `json:"config"`
		Report struct {
			Requests int `json:"requests"`
			Errors   int `json:"errors"`
		} `json:"report"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("bench --json output does not decode: %v\n%s", err, stdout.String())
	}
	if !out.Config.Fresh || out.Report.Requests == 0 || out.Report.Errors != 0 {
		t.Errorf("bench --json = fresh_contexts %v, %d requests, %d errors; want true, some, none", out.Config.Fresh, out.Report.Requests, out.Report.Errors)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("contextId %q sent %d times, want once", id, n)
		}
	}

	err := runBench(t.Context(), []string{"--fresh-contexts", "--contexts", "4", srv.URL + "/"}, &stdout, &stderr)
	if !errors.As(err, new(benchUsageError)) || !strings.Contains(err.Error(), "exclude each other") {
		t.Errorf("runBench(--fresh-contexts --contexts 4) error = %v, want a usage error", err)
	}
}
