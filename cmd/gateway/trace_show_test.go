package main

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
)

// TestShowTraceIDs: `conversations show` prints an entry's trace and span ids (trace=…
// span=…, "-" for an entry without) and --json carries traceId and spanId.
func TestShowTraceIDs(t *testing.T) {
	dir := t.TempDir()
	st, err := ledger.Open(dir+"/ledger.db", ledger.Options{NoSync: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	msg := func(text, traceID, spanID string) ledger.Entry {
		return ledger.Entry{Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
			Role: ledger.RoleUser, Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}, TraceID: traceID, SpanID: spanID}
	}
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	if _, err := st.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "traced", Entries: []ledger.Entry{
		msg("untraced", "", ""), msg("traced", traceID, spanID)}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "conversations", "show", "traced", "--data-dir", dir)
	if err != nil {
		t.Fatalf("show: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[3], "trace="+traceID+" span="+spanID) || strings.Contains(lines[2], "trace=") {
		t.Errorf("show printed:\n%s\nwant the second entry with trace=%s span=%s, the first without", out, traceID, spanID)
	}
	out, _, err = runCLI(t, "conversations", "show", "traced", "--json", "--data-dir", dir)
	if err != nil {
		t.Fatalf("show --json: %v", err)
	}
	var res showResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 2 || res.Entries[1].TraceID != traceID || res.Entries[1].SpanID != spanID || res.Entries[0].TraceID != "" {
		t.Errorf("show --json entries = %+v", res.Entries)
	}
	if strings.Count(out, `"traceId"`) != 1 {
		t.Errorf("show --json: traceId not omitted for the entry without one:\n%s", out)
	}
}
