package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// scrape GETs /metrics (with the admin token when given) and parses the text exposition.
func scrape(t *testing.T, c *http.Client, s *Server, token string) map[string]*dto.MetricFamily {
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

// histSum is value for the sum of a histogram's observations.
func histSum(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	return sumSeries(t, fams, name, labels, func(m *dto.Metric) float64 { return m.GetHistogram().GetSampleSum() })
}

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

// TestMetricsScenario: after a few sends, a busy rejection, a size-limit rejection, a
// rate-limited request and an unknown method, /metrics shows each counter moved by
// exactly that much.
func TestMetricsScenario(t *testing.T) {
	cfg := testConfig(t)
	cfg.RateLimit = "7/h" // seven admitted sends, then RATE_LIMITED (no refill during the test)
	cfg.MaxParts = 2
	// The echo agent that is given the projected history (so projections are measured);
	// its gate keeps the non-blocking turn on m-busy running until the busy send is in.
	gate := make(chan struct{})
	s := startServer(t, cfg, WithAgent(gatedEcho{gate: gate, contextID: "m-busy"}))
	c := newHTTPClient(t)
	url := s.URL()
	before := scrape(t, c, s, "")

	wantCode := func(name string, r rpcResponse, code int) {
		t.Helper()
		switch {
		case code == 0 && r.Error != nil:
			t.Fatalf("%s: error %+v, want success", name, r.Error)
		case code != 0 && (r.Error == nil || r.Error.Code != code):
			t.Fatalf("%s: error %+v, want code %d", name, r.Error, code)
		}
	}
	// Each send a new message (the same one again would be a retry, answered with its task).
	sent := 0
	send := func(contextID, extra string) rpcResponse {
		t.Helper()
		sent++
		return postRPC(t, c, url, false, sendBody(false, contextID, fmt.Sprintf("text %d", sent), extra, ""))
	}
	wantCode("send a", send("m-a", ""), 0)
	wantCode("send b", send("m-b", ""), 0)
	wantCode("send busy (non-blocking)", send("m-busy", `,"configuration":{"blocking":false}`), 0)
	wantCode("send busy again", send("m-busy", ""), -32004)
	close(gate)
	waitIdle(t, s)
	wantCode("send busy after the turn", send("m-busy", ""), 0)
	wantCode("send a again", send("m-a", ""), 0)
	parts := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-parts","contextId":"m-parts","parts":[{"kind":"text","text":"1"},{"kind":"text","text":"2"},{"kind":"text","text":"3"}]}}}`
	wantCode("three parts", postRPC(t, c, url, false, parts), -32602)
	wantCode("eighth send", send("m-limited", ""), -32000)
	wantCode("unknown method", postRPC(t, c, url, false, `{"jsonrpc":"2.0","id":1,"method":"no/such/method","params":{}}`), -32601)
	waitIdle(t, s)

	// Turn metrics are recorded as turns end; poll until the last one is in.
	// Short of that (hang guard), the table below says what is missing.
	var after map[string]*dto.MetricFamily
	testutil.Until(testutil.Deadline(t), func() bool {
		after = scrape(t, c, s, "")
		return value(t, after, "gateway_turns_total")-value(t, before, "gateway_turns_total") >= 5
	})

	send03 := []string{"method", "message/send", "dialect", "0.3"}
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"gateway_requests_total", append(send03, "code", "0"), 5},
		{"gateway_requests_total", append(send03, "code", "-32004"), 1},
		{"gateway_requests_total", append(send03, "code", "-32602"), 1},
		{"gateway_requests_total", append(send03, "code", "-32000"), 1},
		{"gateway_requests_total", []string{"method", "unknown", "dialect", "0.3", "code", "-32601"}, 1},
		{"gateway_request_duration_seconds", []string{"method", "message/send"}, 8},
		{"gateway_turns_total", []string{"state", "completed"}, 5},
		{"gateway_turn_duration_seconds", nil, 5},
		{"gateway_busy_rejections_total", nil, 1},
		{"gateway_busy_reply_seconds", nil, 1},
		{"gateway_rate_limited_total", []string{"peer", "local"}, 1},
		{"gateway_limit_rejections_total", []string{"limit", "parts"}, 1},
		{"gateway_limit_rejections_total", []string{"limit", "part_bytes"}, 0},
		{"gateway_lease_acquire_seconds", []string{"outcome", "ok"}, 5},
		{"gateway_lease_acquire_seconds", []string{"outcome", "held"}, 1},
		{"gateway_lease_acquire_seconds", []string{"outcome", "error"}, 0},
		{"gateway_agent_request_seconds", nil, 5},
		{"gateway_agent_errors_total", nil, 0},
		{"gateway_projection_bytes", nil, 5},
		{"gateway_projection_prefix_stability", nil, 2},  // second turns of m-busy and m-a
		{"gateway_prompt_prefix_reuse_ratio", nil, 2},    // the same turns (issue #38)
		{"gateway_provider_cached_tokens_total", nil, 0}, // the agent is no chat model
		{"gateway_auth_failures_total", nil, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s%v", tt.name, tt.labels), func(t *testing.T) {
			if got := value(t, after, tt.name, tt.labels...) - value(t, before, tt.name, tt.labels...); got != tt.want {
				t.Errorf("%s%v moved by %v, want %v", tt.name, tt.labels, got, tt.want)
			}
		})
	}
	// The busy reply's time is one of the -32004 request's (the only one): the same duration.
	if got, want := histSum(t, after, "gateway_busy_reply_seconds")-histSum(t, before, "gateway_busy_reply_seconds"),
		histSum(t, after, "gateway_request_duration_seconds", "method", "message/send")-histSum(t, before, "gateway_request_duration_seconds", "method", "message/send"); got <= 0 || got > want {
		t.Errorf("gateway_busy_reply_seconds sum moved by %v, want > 0 and at most the message/send time %v", got, want)
	}
	// The ledger committed every turn's entries (user message and reply at least).
	if got := value(t, after, "gateway_ledger_commit_seconds") - value(t, before, "gateway_ledger_commit_seconds"); got < 5 {
		t.Errorf("gateway_ledger_commit_seconds count moved by %v, want at least 5", got)
	}
	if got := histSum(t, after, "gateway_ledger_appends_per_commit") - histSum(t, before, "gateway_ledger_appends_per_commit"); got < 10 {
		t.Errorf("gateway_ledger_appends_per_commit sum moved by %v, want at least 10 entries", got)
	}
	st := s.ledger.Stats()
	if got := histSum(t, after, "gateway_ledger_appends_per_commit"); got > float64(st.Appends) || got == 0 {
		t.Errorf("appends observed = %v, want at most Stats().Appends = %d", got, st.Appends)
	}
	// Gauges and the runtime collectors are exposed.
	for _, name := range []string{"gateway_active_streams", "gateway_websocket_connections", "go_goroutines", "process_start_time_seconds"} {
		if after[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if got := value(t, after, "gateway_active_streams"); got != 0 {
		t.Errorf("gateway_active_streams = %v, want 0 with no stream open", got)
	}
}

// TestMetricsBusyReply: gateway_busy_reply_seconds times each CONTEXT_BUSY answer, unary
// and streamed, with fine buckets, and not the -32004 UNSUPPORTED_OPERATION answer of a
// send to a finished task (the same JSON-RPC code).
func TestMetricsBusyReply(t *testing.T) {
	s := startServer(t, testConfig(t), WithAgent(agent.Echo{Delay: 100 * time.Millisecond}))
	c := newHTTPClient(t)
	url := s.URL()
	done := postRPC(t, c, url, false, sendBody(false, "bm-done", "one", "", ""))
	var task struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(done.Result, &task); err != nil || task.ID == "" {
		t.Fatalf("send result %s: task id %q, err %v", done.Result, task.ID, err)
	}
	before := scrape(t, c, s, "")

	if r := postRPC(t, c, url, false, sendBody(false, "bm-busy", "one two three four five six", `,"configuration":{"blocking":false}`, "")); r.Error != nil {
		t.Fatalf("non-blocking send: error %+v", r.Error)
	}
	for i := range 3 {
		r := postRPC(t, c, url, false, sendBody(false, "bm-busy", "again", "", ""))
		if r.Error == nil || r.Error.Code != -32004 || !bytes.Contains(r.Error.Data, []byte("CONTEXT_BUSY")) {
			t.Fatalf("busy send %d: error %+v, want -32004 CONTEXT_BUSY", i, r.Error)
		}
	}
	if r := call(t, c, url, "", false, sendBody(true, "bm-busy", "again", "", "")); !bytes.Contains(r.body, []byte("CONTEXT_BUSY")) {
		t.Fatalf("busy stream: %d %s, want a CONTEXT_BUSY event", r.status, r.body)
	}
	terminal := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"bm-late","taskId":%q,"parts":[{"kind":"text","text":"late"}]}}}`, task.ID)
	if r := postRPC(t, c, url, false, terminal); r.Error == nil || r.Error.Code != -32004 || bytes.Contains(r.Error.Data, []byte("CONTEXT_BUSY")) {
		t.Fatalf("send to a completed task: error %+v, want -32004 without CONTEXT_BUSY", r.Error)
	}
	waitIdle(t, s)
	after := scrape(t, c, s, "")

	moved := func(name string, labels ...string) float64 {
		return value(t, after, name, labels...) - value(t, before, name, labels...)
	}
	if got := moved("gateway_requests_total", "code", "-32004"); got != 5 {
		t.Errorf("-32004 answers moved by %v, want 5 (4 busy, 1 unsupported)", got)
	}
	if got := moved("gateway_busy_rejections_total"); got != 4 {
		t.Errorf("gateway_busy_rejections_total moved by %v, want 4", got)
	}
	if got := moved("gateway_busy_reply_seconds"); got != 4 {
		t.Errorf("gateway_busy_reply_seconds count moved by %v, want 4 (the busy answers only)", got)
	}
	h := after["gateway_busy_reply_seconds"].GetMetric()[0].GetHistogram()
	var bounds []float64
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			bounds = append(bounds, b.GetUpperBound())
		}
	}
	if len(bounds) == 0 || bounds[0] != .0001 || bounds[len(bounds)-1] != 1 {
		t.Errorf("gateway_busy_reply_seconds buckets %v, want .0001 … 1", bounds)
	}
}

// contextEcho is the echo agent, given the context's history like a model backend.
type contextEcho struct{ agent.Echo }

func (contextEcho) UsesContext() bool { return true }

// gatedEcho is contextEcho whose turns on contextID wait until gate is closed.
type gatedEcho struct {
	contextEcho
	gate      <-chan struct{}
	contextID string
}

func (g gatedEcho) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	if t.ContextID == g.contextID {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return agent.Result{}, ctx.Err()
		}
	}
	return g.contextEcho.Reply(ctx, t, emit)
}

// waitIdle waits until no turn runs.
func waitIdle(t *testing.T, s *Server) {
	t.Helper()
	testutil.WaitFor(t, "no turn running", func() bool { return s.runner.Running() == 0 })
}

// TestMetricsAuth: /metrics follows the admin API's rule: with an admin token it is
// required; without one only loopback clients are served.
func TestMetricsAuth(t *testing.T) {
	cfg := testConfig(t)
	cfg.AdminToken = "s3cret-admin-token"
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	tests := []struct {
		name  string
		auth  string
		wantC int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"a peer-style token is not the admin token", "Bearer " + tokAlice, http.StatusUnauthorized},
		{"admin token", "Bearer s3cret-admin-token", http.StatusOK},
	}
	for _, tt := range tests {
		// /debug/pprof/ follows the same rule as /metrics.
		for _, path := range []string{"metrics", "debug/pprof/cmdline"} {
			t.Run(tt.name+"/"+path, func(t *testing.T) {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+path, nil)
				if tt.auth != "" {
					req.Header.Set("Authorization", tt.auth)
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.wantC {
					t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantC)
				}
				if tt.wantC == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("401 without a WWW-Authenticate challenge")
				}
			})
		}
	}
	// Without an admin token: loopback clients only.
	h := newMetrics(nil).handler(adminGate{}, discardLogger())
	for _, tt := range []struct {
		remote string
		want   int
	}{
		{"127.0.0.1:5000", http.StatusOK},
		{"[::1]:5000", http.StatusOK},
		{"10.1.2.3:5000", http.StatusForbidden},
		{"192.168.0.9:1", http.StatusForbidden},
	} {
		t.Run("no admin token/"+tt.remote, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.RemoteAddr = tt.remote
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("client %s: status %d, want %d", tt.remote, rec.Code, tt.want)
			}
		})
	}
}

// TestMetricsActiveStreams: gateway_active_streams counts an open SSE stream while it
// runs, and a stream past --max-streams-per-peer is refused and counted.
func TestMetricsActiveStreams(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxStreamsPerPeer = 1
	s := startServer(t, cfg, WithAgent(contextEcho{agent.Echo{Delay: 50 * time.Millisecond}}))
	c := newHTTPClient(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL(), strings.NewReader(
		sendBody(true, "st-open", "one two three four five six seven eight nine ten", "", "")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	// The stream is open (its first event arrived, nine words are still to come).
	fams := scrape(t, c, s, "")
	if got := value(t, fams, "gateway_active_streams"); got != 1 {
		t.Errorf("gateway_active_streams during a stream = %v, want 1", got)
	}
	second := call(t, c, s.URL(), "", false, sendBody(true, "st-second", "hi", "", ""))
	if !bytes.Contains(second.body, []byte("-32000")) || !bytes.Contains(second.body, []byte("RATE_LIMITED")) {
		t.Errorf("second concurrent stream = %d %s, want -32000 RATE_LIMITED", second.status, second.body)
	}
	if got := value(t, scrape(t, c, s, ""), "gateway_limit_rejections_total", "limit", "streams"); got != 1 {
		t.Errorf("gateway_limit_rejections_total{limit=streams} = %v, want 1", got)
	}
	for sc.Scan() {
	}
	resp.Body.Close()
	testutil.WaitFor(t, "gateway_active_streams to drop to 0 after the stream ended", func() bool {
		return value(t, scrape(t, c, s, ""), "gateway_active_streams") == 0
	})
}

// TestMetricsAgentRetries: a chat agent's request that the upstream refused with 429 and
// then answered is counted in gateway_agent_retries_total by that status, and the turn
// completes.
func TestMetricsAgentRetries(t *testing.T) {
	var hits atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if hits.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("retry-after-ms", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range openAIEvents("fine now", nil, 1) {
			io.WriteString(w, e)
		}
	}))
	t.Cleanup(upstream.Close)
	cfg := testConfig(t)
	cfg.Agent, cfg.AgentURL, cfg.AgentModel = "openai", upstream.URL+"/v1", "m"
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	before := scrape(t, c, s, "")
	r := postRPC(t, c, s.URL(), false, sendBody(false, "retry-ctx", "hello", "", ""))
	if r.Error != nil || !strings.Contains(string(r.Result), "fine now") {
		t.Fatalf("send = %s, %+v; want the reply after the retry", r.Result, r.Error)
	}
	after := scrape(t, c, s, "")
	if got := value(t, after, "gateway_agent_retries_total", "reason", "429") - value(t, before, "gateway_agent_retries_total", "reason", "429"); got != 1 || hits.Load() != 2 {
		t.Errorf("gateway_agent_retries_total{reason=429} moved by %v after %d upstream requests; want 1 after 2", got, hits.Load())
	}
}

// TestMetricsRetriedSend: a send repeated with the same messageId and text is answered
// as a retry: gateway_send_retries_total moves by 1 and no second turn ends.
func TestMetricsRetriedSend(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	before := scrape(t, c, s, "")
	body := sendBody(false, "retried-ctx", "hello", "", "")
	first, again := postRPC(t, c, s.URL(), false, body), postRPC(t, c, s.URL(), false, body)
	if first.Error != nil || again.Error != nil || string(first.Result) != string(again.Result) {
		t.Fatalf("send twice = %s %+v, then %s %+v; want the same task twice", first.Result, first.Error, again.Result, again.Error)
	}
	waitIdle(t, s)
	after := scrape(t, c, s, "")
	retries := value(t, after, "gateway_send_retries_total") - value(t, before, "gateway_send_retries_total")
	turns := value(t, after, "gateway_turns_total") - value(t, before, "gateway_turns_total")
	if retries != 1 || turns != 1 {
		t.Errorf("gateway_send_retries_total moved by %v and gateway_turns_total by %v; want 1 and 1", retries, turns)
	}
}

// TestMetricsCountWebSocketRequests: a request over /ws is counted and timed in
// gateway_requests_total and gateway_request_duration_seconds as one over HTTP is.
func TestMetricsCountWebSocketRequests(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	before := scrape(t, c, s, "")
	ws := wsDial(t, s, "")
	wsWrite(t, ws, `{"jsonrpc":"2.0","id":"g1","method":"GetTask","params":{"id":"no-such-task"}}`)
	f, err := wsReadFrame(ws)
	if err != nil || f.Error == nil || f.Error.Code != -32001 {
		t.Fatalf("GetTask over /ws: %+v, %v; want -32001", f, err)
	}
	labels := []string{"method", "GetTask", "dialect", "1.0", "code", "-32001"}
	var after map[string]*dto.MetricFamily
	testutil.Until(testutil.Deadline(t), func() bool { // counted as the frame is answered
		after = scrape(t, c, s, "")
		return value(t, after, "gateway_requests_total", labels...) > value(t, before, "gateway_requests_total", labels...)
	})
	if got := value(t, after, "gateway_requests_total", labels...) - value(t, before, "gateway_requests_total", labels...); got != 1 {
		t.Errorf("gateway_requests_total%v moved by %v, want 1", labels, got)
	}
	if got := value(t, after, "gateway_request_duration_seconds", "method", "GetTask") - value(t, before, "gateway_request_duration_seconds", "method", "GetTask"); got != 1 {
		t.Errorf("gateway_request_duration_seconds{method=GetTask} moved by %v, want 1", got)
	}
}
