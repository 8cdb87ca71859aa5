//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/a2a-gateway/gateway/internal/otlptest"
	"github.com/a2a-gateway/gateway/internal/telemetry"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/server"
	"github.com/a2a-gateway/gateway/tools"
)

// chatModel is an OpenAI-compatible Chat Completions server (the real SSE wire format):
// its first answer calls peer_send to target, its second answers in text. It keeps the
// traceparent header of every request.
type chatModel struct {
	*httptest.Server
	target      string
	mu          sync.Mutex
	calls       int
	traceparent []string
}

func newChatModel(t *testing.T, target string) *chatModel {
	m := &chatModel{target: target}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *chatModel) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.traceparent = append(m.traceparent, r.Header.Get("traceparent"))
	m.mu.Unlock()
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}` + "\n\n"
	}
	usage := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"m","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}` + "\n\n"
	w.Header().Set("Content-Type", "text/event-stream")
	events := []string{chunk(`{"role":"assistant","content":""}`, "")}
	if n == 1 {
		args, _ := json.Marshal(map[string]string{"target": m.target, "message": "please ask c"})
		a, _ := json.Marshal(string(args))
		events = append(events, chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"`+tools.ToolPeerSend+`","arguments":`+string(a)+`}}]}`, ""), chunk(`{}`, "tool_calls"))
	} else {
		events = append(events, chunk(`{"content":"b and c answered"}`, ""), chunk(`{}`, "stop"))
	}
	for _, e := range append(events, usage, "data: [DONE]\n\n") {
		_, _ = io.WriteString(w, e)
	}
}

func (m *chatModel) headers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.traceparent...)
}

// tracedGateway starts a gateway whose spans go to rcv under service.
func tracedGateway(t *testing.T, rcv *otlptest.Receiver, service string, cfg server.Config) (*server.Server, telemetry.Tracing) {
	t.Helper()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL(), "OTEL_SERVICE_NAME": service}
	tel, err := telemetry.Setup(t.Context(), func(k string) string { return env[k] })
	if err != nil || tel.Mode != telemetry.Exporting {
		t.Fatalf("telemetry.Setup = %s, %v", tel.Mode, err)
	}
	cfg.TracerProvider = tel.Provider
	return startServer(t, cfg), tel
}

// TestTraceAcrossThreeGateways (issue #37): A's model calls B with peer_send, B's exec
// agent calls C with `gateway send` (through its turn's tools). One trace holds the spans
// of all three gateways, each span's parent is in it (one root, A's server span), each
// hop's server span is the child of the caller's client span; the trace reached the
// OpenAI-compatible backend's headers and the exec agent's TRACEPARENT, and every
// gateway's ledger entries of the chain carry its id.
func TestTraceAcrossThreeGateways(t *testing.T) {
	t.Parallel()
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	rcv := otlptest.Start(t)
	c, telC := tracedGateway(t, rcv, "gw-c", testConfig(t)) // echo

	tpFile := filepath.Join(t.TempDir(), "traceparent")
	cfgB := testConfig(t)
	cfgB.Agent, cfgB.Peers = "exec", []server.Peer{{Name: "c", URL: c.URL()}}
	cfgB.AgentCommand = `printf %s "$TRACEPARENT" > '` + tpFile + `'; '` + bin + `' send c "hello from b"`
	b, telB := tracedGateway(t, rcv, "gw-b", cfgB)

	model := newChatModel(t, "b")
	cfgA := testConfig(t)
	cfgA.Agent, cfgA.AgentURL, cfgA.AgentModel = "openai", model.URL+"/v1", "m"
	cfgA.Peers = []server.Peer{{Name: "b", URL: b.URL()}}
	a, telA := tracedGateway(t, rcv, "gw-a", cfgA)

	reply, ctxA := sendText(t, a.URL(), "ask b to ask c")
	if !strings.Contains(reply, "b and c answered") {
		t.Fatalf("A's reply = %q", reply)
	}
	_, resA := toolEntries(conversation(t, a, "local", ctxA))
	if len(resA) != 1 || resA[0].CorrelationID == "" {
		t.Fatalf("A's peer_send result: %+v", resA)
	}
	ctxB := resA[0].CorrelationID
	_, resB := toolEntries(conversation(t, b, "local", ctxB))
	if len(resB) != 1 || resB[0].CorrelationID == "" {
		t.Fatalf("B's peer_send result: %+v", resB)
	}
	ctxC := resB[0].CorrelationID
	ledgers := map[string][]ledger.Entry{
		"A " + ctxA: conversation(t, a, "local", ctxA), "B " + ctxB: conversation(t, b, "local", ctxB),
		"C " + ctxC: conversation(t, c, "local", ctxC),
	}
	// Every span has ended once the servers have closed; then each provider flushes.
	for _, s := range []*server.Server{a, b, c} {
		stopServer(t, s)
	}
	for _, tel := range []telemetry.Tracing{telA, telB, telC} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := tel.Shutdown(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
		cancel()
	}
	if bad := rcv.Rejected(); len(bad) > 0 {
		t.Fatalf("the receiver refused exports: %v", bad)
	}
	traceID := checkTraceTree(t, rcv.Spans())

	for i, h := range model.headers() {
		if !strings.Contains(h, "-"+traceID+"-") {
			t.Errorf("the model's request %d carried traceparent %q, want trace %s", i, h, traceID)
		}
	}
	if tp, err := os.ReadFile(tpFile); err != nil || !strings.Contains(string(tp), "-"+traceID+"-") {
		t.Errorf("B's exec agent had TRACEPARENT=%q (%v), want trace %s", tp, err, traceID)
	}
	for name, entries := range ledgers {
		stamped := 0
		for _, e := range entries {
			if e.TraceID != "" && e.TraceID != traceID {
				t.Errorf("%s: entry %d (%s) carries trace %s, want %s", name, e.Seq, e.Kind, e.TraceID, traceID)
			}
			if e.TraceID == traceID && e.SpanID != "" {
				stamped++
			}
		}
		if stamped == 0 || stamped < len(entries)/2 {
			t.Errorf("%s: %d of %d entries carry the trace id", name, stamped, len(entries))
		}
	}
}

// checkTraceTree checks the received spans form one trace across gw-a, gw-b and gw-c
// with correct parents, and returns its id.
func checkTraceTree(t *testing.T, spans []otlptest.Span) string {
	t.Helper()
	var root otlptest.Span
	for _, s := range spans {
		if s.Service == "gw-a" && s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.ParentID == "" {
			root = s
		}
	}
	if root.TraceID == "" {
		t.Fatalf("no root server span of gw-a among %d spans: %s", len(spans), describe(spans))
	}
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		if s.TraceID == root.TraceID {
			byID[s.SpanID] = s
		}
	}
	services := map[string]int{}
	for _, s := range byID {
		services[s.Service]++
		if s.SpanID == root.SpanID {
			continue
		}
		p, ok := byID[s.ParentID]
		if !ok {
			t.Errorf("span %s %q: parent %s is not in the trace", s.Service, s.Name, s.ParentID)
			continue
		}
		// A server span on another gateway is the child of the caller's client span.
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER && p.Service != s.Service && p.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("%s's server span %q has parent %s %q of kind %v, want a client span", s.Service, s.Name, p.Service, p.Name, p.Kind)
		}
	}
	for _, want := range []string{"gw-a", "gw-b", "gw-c"} {
		if services[want] == 0 {
			t.Errorf("the trace has no span of %s: %s", want, describe(spans))
		}
	}
	for _, want := range []struct{ service, name string }{
		{"gw-a", "a2a.turn"}, {"gw-a", "chat m"}, {"gw-a", "execute_tool peer_send"}, {"gw-a", "lease.acquire"}, {"gw-a", "ledger.commit"},
		{"gw-b", "a2a.turn"}, {"gw-b", "agent.run"}, {"gw-b", "execute_tool peer_send"}, {"gw-c", "a2a.turn"},
	} {
		if !hasSpan(byID, want.service, want.name) {
			t.Errorf("the trace has no %q span of %s: %s", want.name, want.service, describe(spans))
		}
	}
	for _, s := range byID {
		if s.Name == "chat m" && (s.Attrs["gen_ai.operation.name"] != "chat" || s.Attrs["gen_ai.usage.input_tokens"] != int64(42)) {
			t.Errorf("chat span attributes = %v", s.Attrs)
		}
	}
	crossings := 0
	for _, s := range byID {
		if p, ok := byID[s.ParentID]; ok && p.Service != s.Service {
			crossings++
		}
	}
	if crossings < 2 {
		t.Errorf("%d spans have a parent on another gateway, want at least 2 (A→B, B→C): %s", crossings, describe(spans))
	}
	return root.TraceID
}

func hasSpan(spans map[string]otlptest.Span, service, name string) bool {
	for _, s := range spans {
		if s.Service == service && s.Name == name {
			return true
		}
	}
	return false
}

func describe(spans []otlptest.Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "\n  %s %s %q span=%s parent=%s kind=%v", s.Service, s.TraceID, s.Name, s.SpanID, s.ParentID, s.Kind)
	}
	return b.String()
}
