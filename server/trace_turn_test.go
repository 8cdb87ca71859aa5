package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// tracedServer starts a server whose TracerProvider records into the returned recorder.
func tracedServer(t *testing.T) (*Server, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	cfg := testConfig(t)
	cfg.TracerProvider = tp
	return startServer(t, cfg), rec
}

// turnTraceID is the trace id of the ended a2a.turn span (there must be one).
func turnTraceID(t *testing.T, rec *tracetest.SpanRecorder) string {
	t.Helper()
	for _, s := range rec.Ended() {
		if s.Name() == "a2a.turn" {
			return s.SpanContext().TraceID().String()
		}
	}
	t.Fatal("no a2a.turn span ended")
	return ""
}

// TestTurnExemplar: after a traced turn, /metrics in OpenMetrics shows the turn's trace
// id as the exemplar of a bucket of gateway_turn_duration_seconds; the Prometheus text
// format (no Accept) still carries none.
func TestTurnExemplar(t *testing.T) {
	s, rec := tracedServer(t)
	c := newHTTPClient(t)
	if res := postRPC(t, c, s.URL(), false, sendBody(false, "exemplar-ctx", "hello", "", "")); res.Error != nil {
		t.Fatalf("send: %+v", res.Error)
	}
	waitIdle(t, s)
	want := `# {trace_id="` + turnTraceID(t, rec) + `"}`
	om := getMetrics(t, c, s, "application/openmetrics-text; version=1.0.0")
	found := false
	for _, line := range strings.Split(om, "\n") {
		if strings.HasPrefix(line, "gateway_turn_duration_seconds_bucket{") && strings.Contains(line, want) {
			found = true
		}
	}
	if !found {
		t.Errorf("no bucket of gateway_turn_duration_seconds carries %s in:\n%s", want, grepLines(om, "gateway_turn_duration"))
	}
	if text := getMetrics(t, c, s, ""); strings.Contains(text, "trace_id") {
		t.Errorf("the text format carries an exemplar:\n%s", grepLines(text, "trace_id"))
	}
}

func getMetrics(t *testing.T, c *http.Client, s *Server, accept string) string {
	t.Helper()
	var header []string
	if accept != "" {
		header = []string{"Accept", accept}
	}
	return string(getOK(t, c, s.URL()+"metrics", header...))
}

func grepLines(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestAdminShowsTraceIDs: GET /admin/v1/conversations/{contextId} gives every entry of a
// traced turn its traceId and spanId.
func TestAdminShowsTraceIDs(t *testing.T) {
	s, rec := tracedServer(t)
	c := newHTTPClient(t)
	if res := postRPC(t, c, s.URL(), false, sendBody(false, "admin-trace", "hello", "", "")); res.Error != nil {
		t.Fatalf("send: %+v", res.Error)
	}
	waitIdle(t, s)
	traceID := turnTraceID(t, rec)
	resp := adminGet(t, c, s, "admin/v1/conversations/admin-trace", "")
	defer resp.Body.Close()
	var show struct {
		Entries []struct {
			Seq     uint64 `json:"seq"`
			TraceID string `json:"traceId"`
			SpanID  string `json:"spanId"`
		} `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&show); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET show: %d, %v", resp.StatusCode, err)
	}
	if len(show.Entries) == 0 {
		t.Fatal("no entries shown")
	}
	for _, e := range show.Entries {
		if e.TraceID != traceID || len(e.SpanID) != 16 {
			t.Errorf("entry %d: traceId %q spanId %q, want trace %s and a span id", e.Seq, e.TraceID, e.SpanID, traceID)
		}
	}
}
