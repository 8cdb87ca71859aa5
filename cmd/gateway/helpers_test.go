package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/conversations"
	dto "github.com/prometheus/client_model/go"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/server"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
func testConfig(t *testing.T) server.Config {
	t.Helper()
	return server.Config{
		Addr: "127.0.0.1:0", DataDir: t.TempDir(), Agent: "echo",
		LogLevel: slog.LevelInfo, LogFormat: "json", ShutdownTimeout: 5 * time.Second,
		BusyPolicy: "reject", LeaseTTL: 30 * time.Second,
		AgentInput: "text", AgentTimeout: 30 * time.Second, HistoryLimit: 20,
	}
}

// startServer runs a real gateway in-process, for the commands to talk to; it is
// closed at cleanup.
func startServer(t *testing.T, cfg server.Config, opts ...server.Option) *server.Server {
	t.Helper()
	s, err := server.Open(t.Context(), cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})), opts...)
	if err != nil {
		t.Fatalf("server.Open() error = %v", err)
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
func stopServer(t *testing.T, s *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// adminToken is the token a gateway started without --admin-token wrote to its data dir
// for admin writes.
func adminToken(t *testing.T, s *server.Server) string {
	t.Helper()
	tok := server.LocalAdminToken(s.URL(), s.Config().DataDir)
	if tok == "" {
		t.Fatalf("no admin token in %s", s.Config().DataDir)
	}
	return tok
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

// pollCondition waits until cond holds, checking every few milliseconds, and fails the
// test after timeout, naming what it waited for.
func pollCondition(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("waited %s for %s", timeout, what)
		}
	}
}

// noGatewayURL returns an http URL on 127.0.0.1 where no gateway answers: the port stays
// held for the test's life (a listener that drops every connection), so that no other
// test's server can take it, as it could take a closed port (a --server that then
// answered would record another test's exchange).
func noGatewayURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // exits when the cleanup closes ln
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return "http://" + ln.Addr().String() + "/"
}

// seedOps starts a gateway whose ledger holds "mine" (local, two turns), "shared" (local
// and out:a), "a/b" and "100%" (local), and returns it.
func seedOps(t *testing.T) *server.Server {
	t.Helper()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	for _, id := range []string{"mine", "mine", "shared", "a/b", "100%"} {
		if r := sendV03(t, c, s.URL(), id, "hello "+id); r.Error != nil {
			t.Fatalf("send to %q: %+v", id, r.Error)
		}
	}
	rec := conversations.OutboundRecord{Peer: "a", PeerURL: "http://127.0.0.1:1/", ContextID: "shared", State: "completed", Text: "hi", Reply: "echo: hi"}
	if _, err := server.NewAdminClient("http://"+s.Addr(), adminToken(t, s)).RecordOutbound(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	return s
}

// postOutbound posts outboundBody to s's admin API with the given Authorization header
// ("" for none) and returns the status and body.
func postOutbound(t *testing.T, c *http.Client, s *server.Server, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"admin/v1/outbound", strings.NewReader(outboundBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ledgerKeys returns the owners of every conversation in s's ledger.
func ledgerKeys(t *testing.T, s *server.Server) []string {
	t.Helper()
	all, err := s.Ledger().List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range all {
		out = append(out, c.Owner+"/"+c.ContextID)
	}
	return out
}

// sendBody is a v0.3 message/send or message/stream request; extra is spliced into the
// params (after the message) and meta into the message's metadata.
func sendBody(stream bool, contextID, text, extra, meta string) string {
	method := "message/send"
	if stream {
		method = "message/stream"
	}
	if meta == "" {
		meta = "{}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":{"kind":"message","role":"user","messageId":"m-%s","contextId":%q,"metadata":%s,"parts":[{"kind":"text","text":%q}]}%s}}`,
		method, contextID, contextID, meta, text, extra)
}

// countingAgent measures how many turns run at once per context, and holds each turn for
// hold (or until release is closed, when set).
type countingAgent struct {
	hold    time.Duration
	release chan struct{}
	mu      sync.Mutex
	running map[string]int
	max     int
	turns   atomic.Int64
}

func newCountingAgent(hold time.Duration) *countingAgent {
	return &countingAgent{hold: hold, running: map[string]int{}}
}

func (a *countingAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	a.mu.Lock()
	a.running[t.ContextID]++
	a.max = max(a.max, a.running[t.ContextID])
	a.mu.Unlock()
	a.turns.Add(1)
	defer func() {
		a.mu.Lock()
		a.running[t.ContextID]--
		a.mu.Unlock()
	}()
	wait := time.After(a.hold)
	if a.release != nil {
		wait = nil
	}
	select {
	case <-wait:
	case <-a.release:
	case <-ctx.Done():
		return agent.Result{}, ctx.Err()
	}
	return agent.Result{}, emit("done: " + t.Text)
}

// sendResult is the outcome of one send: its JSON-RPC error code (0: ok) and reason.
type sendResult struct {
	code    int
	reason  string
	latency time.Duration
}

func sendOnce(t *testing.T, c *http.Client, url, contextID, text string) sendResult {
	t.Helper()
	start := time.Now()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-%s","contextId":%q,"parts":[{"kind":"text","text":%q}]}}}`, text, contextID, text)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("send %s: %v", text, err)
		return sendResult{code: -1}
	}
	defer resp.Body.Close()
	var r rpcResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Errorf("send %s: %v", text, err)
		return sendResult{code: -1}
	}
	out := sendResult{latency: time.Since(start)}
	if r.Error != nil {
		out.code = r.Error.Code
		var data struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(r.Error.Data, &data)
		out.reason = data.Reason
	}
	return out
}

// scrape GETs /metrics (with the admin token when given) and parses the text exposition.
func scrape(t *testing.T, c *http.Client, s *server.Server, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+"metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("GET /metrics: Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value sums, over the series of family name whose labels include the given pairs, the
// counter or gauge value, or the sample count of a histogram. A family or series not
// exposed yet counts 0.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	return sumSeries(t, fams, name, labels, func(m *dto.Metric) float64 {
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			return m.Untyped.GetValue()
		}
		return 0
	})
}

// pushGet fetches url with headers and returns its body (status 200 required).
func pushGet(t *testing.T, c *http.Client, url string, headers map[string]string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}

// cardPushOn reports whether the card at base declares capabilities.pushNotifications.
func cardPushOn(t *testing.T, c *http.Client, base string) bool {
	t.Helper()
	var card struct {
		Capabilities struct{ PushNotifications bool }
	}
	if err := json.Unmarshal(pushGet(t, c, base+".well-known/agent-card.json", nil), &card); err != nil {
		t.Fatal(err)
	}
	return card.Capabilities.PushNotifications
}

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

// busyAddr returns the address of a loopback listener the test holds open (connections
// to it are never accepted).
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String()
}

// sendText sends text to the gateway at url (blocking message/send) and returns the
// reply's text and contextId.
func sendText(t *testing.T, url, text string) (reply, contextID string) {
	t.Helper()
	return sendTextIn(t, url, "", text)
}

// sendTextIn is sendText in the conversation contextID ("" for a new one).
func sendTextIn(t *testing.T, url, contextID, text string) (reply, replyContextID string) {
	t.Helper()
	msg, _ := json.Marshal(text)
	ctxField := ""
	if contextID != "" {
		ctxField = `"contextId":"` + contextID + `",`
	}
	res := postRPC(t, newHTTPClient(t), url, false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message",`+ctxField+`"messageId":"m-`+fmt.Sprint(len(text))+`","role":"user","parts":[{"kind":"text","text":`+string(msg)+`}]}}}`)
	if res.Error != nil {
		t.Fatalf("message/send error: %+v", res.Error)
	}
	var task struct {
		ContextID string `json:"contextId"`
		Status    struct {
			State string `json:"state"`
		} `json:"status"`
		Artifacts []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(res.Result, &task); err != nil {
		t.Fatal(err)
	}
	if task.Status.State != "completed" {
		t.Fatalf("task state %q, want completed: %s", task.Status.State, res.Result)
	}
	var b strings.Builder
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String(), task.ContextID
}

// conversation is a conversation's entries as the operator service shows them.
func conversation(t *testing.T, s *server.Server, owner, contextID string) []ledger.Entry {
	t.Helper()
	res, err := conversations.New(s.Ledger(), conversations.Config{}).Show(t.Context(), conversations.Ref{ContextID: contextID, Owner: owner}, conversations.ShowOptions{})
	if err != nil {
		t.Fatalf("Show(%s, %s) error = %v", owner, contextID, err)
	}
	return res.Entries
}

// toolEntries are the TOOL_CALL and TOOL_RESULT entries of entries.
func toolEntries(entries []ledger.Entry) (calls, results []ledger.Entry) {
	for _, e := range entries {
		switch e.Kind {
		case ledger.KindToolCall:
			calls = append(calls, e)
		case ledger.KindToolResult:
			results = append(results, e)
		}
	}
	return calls, results
}

// outboundBody is a valid POST /admin/v1/outbound record.
const outboundBody = `{"peer":"intruder","peerUrl":"http://127.0.0.1:1/","contextId":"planted","state":"completed","text":"I never sent this","reply":"ok"}`

func sumSeries(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels []string, get func(*dto.Metric) float64) float64 {
	t.Helper()
	if len(labels)%2 != 0 {
		t.Fatalf("labels %v: want name, value pairs", labels)
	}
	f := fams[name]
	if f == nil {
		return 0
	}
	total := 0.0
series:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, lp := range m.Label {
			have[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue series
			}
		}
		total += get(m)
	}
	return total
}
