package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
)

// testMemorySnapshot: a MEMORY_SNAPSHOT entry (issue #38) is stored and read back with
// its record; a malformed one (wrong trust or visibility, evidence outside its range, no
// evidence, a bad hash, an unknown field) is a *FieldError on its metadata, trust or
// visibility and stores nothing.
func testMemorySnapshot(t *testing.T, s Store) {
	ctx := context.Background()
	res := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "mem", BeginTurn: true,
		Entries: []ledger.Entry{msg("the build uses Go 1.26"), msg("second")}})
	first := res.Entries[0]
	rec := ledger.MemorySnapshot{Version: ledger.MemoryVersion, First: 1, Last: 2, Summariser: "extractive",
		Facts: []ledger.MemoryFact{{Text: "the build uses Go 1.26", Evidence: []ledger.Evidence{{Seq: first.Seq, Hash: first.Hash}}}}}
	snap := memoryEntry(t, rec)
	got := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "mem", Entries: []ledger.Entry{snap}})
	read, err := s.Range(ctx, "o", "mem", 2, 0)
	if err != nil || len(read) != 1 {
		t.Fatalf("Range() = %d entries, %v; want 1", len(read), err)
	}
	if diff := cmp.Diff(got.Entries, read); diff != "" {
		t.Errorf("read back differs (-append +read):\n%s", diff)
	}
	back, err := ledger.MemoryRecord(&read[0])
	if err != nil {
		t.Fatalf("MemoryRecord() error = %v", err)
	}
	if diff := cmp.Diff(rec, back); diff != "" {
		t.Errorf("MemoryRecord() (-want +got):\n%s", diff)
	}
	bad := []struct {
		name, field string
		edit        func(e *ledger.Entry, r *ledger.MemorySnapshot)
	}{
		{"trust", "trust", func(e *ledger.Entry, _ *ledger.MemorySnapshot) { e.Trust = ledger.TrustAgent }},
		{"visibility", "visibility", func(e *ledger.Entry, _ *ledger.MemorySnapshot) { e.Visibility = ledger.VisibilityAudit }},
		{"outside", "metadata", func(_ *ledger.Entry, r *ledger.MemorySnapshot) { r.Facts[0].Evidence[0].Seq = 3 }},
		{"no evidence", "metadata", func(_ *ledger.Entry, r *ledger.MemorySnapshot) { r.Facts[0].Evidence = nil }},
		{"hash", "metadata", func(_ *ledger.Entry, r *ledger.MemorySnapshot) { r.Facts[0].Evidence[0].Hash = "abc" }},
		{"range", "metadata", func(_ *ledger.Entry, r *ledger.MemorySnapshot) { r.First = 3 }},
	}
	for _, b := range bad {
		r := rec
		r.Facts = []ledger.MemoryFact{{Text: rec.Facts[0].Text, Evidence: append([]ledger.Evidence(nil), rec.Facts[0].Evidence...)}}
		e := ledger.Entry{}
		b.edit(&e, &r)
		m := memoryEntry(t, r)
		if e.Trust != "" {
			m.Trust = e.Trust
		}
		if e.Visibility != "" {
			m.Visibility = e.Visibility
		}
		_, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "mem", Entries: []ledger.Entry{m}})
		var fe *ledger.FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ledger.ErrInvalid) || fe.Field != b.field {
			t.Errorf("%s: err = %v, want a *FieldError on %s", b.name, err, b.field)
		}
	}
	unknown := memoryEntry(t, rec)
	unknown.Metadata = append(unknown.Metadata[:len(unknown.Metadata)-1:len(unknown.Metadata)-1], []byte(`,"extra":1}`)...)
	if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "mem", Entries: []ledger.Entry{unknown}}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("unknown field: err = %v, want ErrInvalid", err)
	}
	if c, err := s.Conversation(ctx, "o", "mem"); err != nil || c.LastSeq != 3 {
		t.Errorf("after refusals: LastSeq = %d, %v; want 3", c.LastSeq, err)
	}
}

func memoryEntry(t *testing.T, r ledger.MemorySnapshot) ledger.Entry {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return ledger.Entry{Kind: ledger.KindMemorySnapshot, Trust: ledger.TrustModel, Visibility: ledger.VisibilityModel,
		Actor: "gateway", Metadata: b}
}
