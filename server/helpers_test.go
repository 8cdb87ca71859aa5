package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.VerifyTestMain(m, func() {
		removeBuiltBinary()
		if err := pgtest.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	})
}

// builtBinaryDir is the temp dir of the gateway binary the process tests build (once
// per test binary); TestMain removes it at the end.
var builtBinaryDir struct {
	sync.Mutex
	dir string
}

func removeBuiltBinary() {
	builtBinaryDir.Lock()
	defer builtBinaryDir.Unlock()
	if builtBinaryDir.dir != "" {
		_ = os.RemoveAll(builtBinaryDir.dir)
	}
}

// testConfig is a serve config on a free loopback port with a fresh data dir.
func testConfig(t *testing.T) Config {
	t.Helper()
	return Config{
		Addr: "127.0.0.1:0", DataDir: t.TempDir(), Agent: "echo",
		LogLevel: slog.LevelInfo, LogFormat: "json", ShutdownTimeout: 5 * time.Second,
		BusyPolicy: "reject", LeaseTTL: 30 * time.Second,
		AgentInput: "text", AgentTimeout: 30 * time.Second, HistoryLimit: 20,
	}
}

// startServer runs a real gateway in-process; it is closed at cleanup.
func startServer(t *testing.T, cfg Config, opts ...Option) *Server {
	t.Helper()
	s, err := Open(t.Context(), cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})), opts...)
	if err != nil {
		t.Fatalf("OpenServer() error = %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close() error = %v", err)
		}
	})
	return s
}

// stopServer closes a server of startServer before the test ends (to read its data dir
// offline); the cleanup's Close is then a no-op.
func stopServer(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// newHTTPClient returns a client whose idle connections are closed at cleanup (goleak).
func newHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// rpcResponse is a decoded JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// postRPC posts a raw JSON-RPC body and decodes the response (HTTP 200 required).
func postRPC(t *testing.T, c *http.Client, url string, v1 bool, body string) rpcResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if v1 {
		req.Header.Set("A2A-Version", "1.0")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST status = %d, want 200; body %s", resp.StatusCode, b)
	}
	var out rpcResponse
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("response %s: %v", b, err)
	}
	return out
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
