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
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/ledger"
)

func TestMain(m *testing.M) {
	redistest.VerifyTestMain(m, func() {
		if err := pgtest.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	})
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

// sendV03 sends a v0.3 message/send of text to contextID.
func sendV03(t *testing.T, c *http.Client, url, contextID, text string) rpcResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{
		"message": map[string]any{"kind": "message", "role": "user", "messageId": fmt.Sprintf("m-%d", time.Now().UnixNano()),
			"contextId": contextID, "parts": []any{map[string]any{"kind": "text", "text": text}}}}})
	return postRPC(t, c, url, false, string(body))
}

// entryText is an entry's parts as one text, as `gateway conversations show` prints them:
// text parts as they are, others as a bracketed note.
func entryText(e *ledger.Entry) string {
	var b strings.Builder
	for _, p := range e.Parts {
		switch {
		case p.ArtifactRef != "":
			fmt.Fprintf(&b, "[%d bytes in %s]", p.Size, p.ArtifactRef)
		case p.Kind == ledger.PartText:
			b.WriteString(p.Text)
		default:
			fmt.Fprintf(&b, "[%s part]", p.Kind)
		}
	}
	return b.String()
}

// exportAll opens the ledger at path and returns every entry of every conversation as
// JSON Lines; it fails the test unless an entry holds each label (each write path left
// its entries).
func exportAll(t *testing.T, path string, labels []string) []byte {
	t.Helper()
	led, err := ledger.Open(path, ledger.Options{}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	svc := conversations.New(led, conversations.Config{})
	page, err := svc.List(t.Context(), conversations.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, c := range page.Conversations {
		if err := svc.Export(t.Context(), conversations.Ref{ContextID: c.ContextID, Owner: c.Peer}, &buf); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range labels {
		if !strings.Contains(buf.String(), l) {
			t.Errorf("%s: no entry holds %q: a write path was not exercised", path, l)
		}
	}
	return buf.Bytes()
}
