package ledgertest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
)

// Trace ids the suite stores: W3C trace context's example.
const (
	traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanID  = "00f067aa0ba902b7"
)

// testTraceIDs: entries carry the trace and span ids they were appended with (DESIGN
// D-10), read back as appended, mixed with entries without ids in one chain that
// verifies; a malformed id is a *FieldError and stores nothing.
func testTraceIDs(t *testing.T, s Store) {
	ctx := context.Background()
	traced := msg("traced")
	traced.TraceID, traced.SpanID = traceID, spanID
	tool := status("task-1", "working")
	tool.TraceID, tool.SpanID = traceID, "b7ad6b7169203331"
	res := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "tr", BeginTurn: true,
		Entries: []ledger.Entry{msg("plain"), traced, tool}})
	got, err := s.Range(ctx, "o", "tr", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res.Entries, got); diff != "" {
		t.Errorf("read back differs (-append +read):\n%s", diff)
	}
	want := [][2]string{{"", ""}, {traceID, spanID}, {traceID, "b7ad6b7169203331"}}
	for i, e := range got {
		if [2]string{e.TraceID, e.SpanID} != want[i] {
			t.Errorf("seq %d ids = %q %q, want %q", e.Seq, e.TraceID, e.SpanID, want[i])
		}
	}
	if err := s.Verify(ctx, "o", "tr"); err != nil {
		t.Errorf("Verify() = %v", err)
	}
	bad := []struct{ traceID, spanID, field string }{
		{strings.ToUpper(traceID), spanID, "traceId"},
		{traceID, "xyz", "spanId"},
		{strings.Repeat("0", 32), spanID, "traceId"},
		{"", spanID, "traceId"},
	}
	for _, b := range bad {
		e := msg("refused")
		e.TraceID, e.SpanID = b.traceID, b.spanID
		_, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "tr", Entries: []ledger.Entry{msg("ok"), e}})
		var fe *ledger.FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ledger.ErrInvalid) || fe.Entry != 1 || fe.Field != b.field {
			t.Errorf("ids %q %q: err = %v, want a *FieldError on entries[1].%s", b.traceID, b.spanID, err, b.field)
		}
	}
	if after, err := s.Range(ctx, "o", "tr", 0, 0); err != nil || len(after) != len(got) {
		t.Errorf("refused appends stored entries: %d, want %d (err %v)", len(after), len(got), err)
	}
}
