package ledger

// The trace and span ids an entry carries (DESIGN D-10): frozen in their own fixture
// (testdata/frozen_traced_entry.json and .hash, regenerated with -update as the other
// frozen entry is), while the frozen entry without them keeps its bytes and hash
// (TestFrozenEntry): entries stored before the fields existed verify as before.

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	frozenTracedFile     = "testdata/frozen_traced_entry.json"
	frozenTracedHashFile = "testdata/frozen_traced_entry.hash"
	testTraceID          = "4bf92f3577b34da6a3ce929d0e0e4736"
	testSpanID           = "00f067aa0ba902b7"
)

func TestFrozenTracedEntry(t *testing.T) {
	e := frozenEntry()
	e.TraceID, e.SpanID = testTraceID, testSpanID
	if err := validateEntry(0, &e, e.Owner, e.ContextID); err != nil {
		t.Fatalf("the frozen traced entry is not valid: %v", err)
	}
	stored, hash := encodeFrozen(t, e)
	if *update {
		writeFile(t, frozenTracedFile, append(bytes.Clone(stored), '\n'))
		writeFile(t, frozenTracedHashFile, []byte(hash+"\n"))
	}
	wantStored := bytes.TrimSuffix(readFile(t, frozenTracedFile), []byte("\n"))
	wantHash := strings.TrimSpace(string(readFile(t, frozenTracedHashFile)))
	if diff := cmp.Diff(string(wantStored), string(stored)); diff != "" {
		t.Errorf("the stored encoding of the frozen traced entry changed (-want +got):\n%s", diff)
	}
	if hash != wantHash {
		t.Errorf("the hash of the frozen traced entry = %s, want %s", hash, wantHash)
	}
	if !bytes.Contains(stored, []byte(`"causationId":"cause-6","traceId":"`+testTraceID+`","spanId":"`+testSpanID+`","prevHash":`)) {
		t.Errorf("traceId and spanId are not between causationId and prevHash: %s", stored)
	}
	plain, plainHash := encodeFrozen(t, frozenEntry())
	if plainHash == hash || bytes.Equal(plain, stored) {
		t.Error("the ids are not covered by the hash")
	}
	if bytes.Contains(plain, []byte("traceId")) || bytes.Contains(plain, []byte("spanId")) {
		t.Errorf("an entry without ids encodes them: %s", plain)
	}
	// The checker other backends verify with, and the decoder reads use.
	got, err := CheckEntry("v1/x", e.ContextID, e.Owner, e.Seq, e.PrevHash, wantStored)
	if err != nil {
		t.Fatalf("CheckEntry(frozen traced) = %v", err)
	}
	var back Entry
	if _, err := decodeInto(wantStored, &back, nil, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, back); diff != "" || back.TraceID != testTraceID || back.SpanID != testSpanID {
		t.Errorf("decodeInto differs from json.Unmarshal or lost the ids (-json +decoder):\n%s", diff)
	}
	e.Hash = ""
	canonical, _ := json.Marshal(&e)
	if chainHash(e.PrevHash, canonical) != wantHash {
		t.Error("Verify's recomputed hash differs from the fixture's")
	}
}

func TestTraceIDsValidated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, traceID, spanID, field string
	}{
		{"span without trace", "", testSpanID, "traceId"},
		{"trace without span", testTraceID, "", "spanId"},
		{"short trace", testTraceID[:31], testSpanID, "traceId"},
		{"long span", testTraceID, testSpanID + "0", "spanId"},
		{"uppercase trace", strings.ToUpper(testTraceID), testSpanID, "traceId"},
		{"non-hex span", testTraceID, "00f067aa0ba902bg", "spanId"},
		{"zero trace", strings.Repeat("0", 32), testSpanID, "traceId"},
		{"zero span", testTraceID, strings.Repeat("0", 16), "spanId"},
	}
	s := mustOpen(t, testOpts)
	for _, tt := range tests {
		e := userMsg("hello")
		e.TraceID, e.SpanID = tt.traceID, tt.spanID
		_, err := s.Append(t.Context(), AppendRequest{Owner: "o", ContextID: "c", Entries: []Entry{userMsg("first"), e}})
		fe, ok := err.(*FieldError)
		if !ok || fe.Entry != 1 || fe.Field != tt.field {
			t.Errorf("%s: Append() error = %v, want a *FieldError on entries[1].%s", tt.name, err, tt.field)
		}
	}
	if convs, err := s.List(t.Context(), ListOptions{}); err != nil || len(convs) != 0 {
		t.Errorf("refused appends stored %d conversations (err %v)", len(convs), err)
	}
	e := userMsg("hello")
	e.TraceID, e.SpanID = testTraceID, testSpanID
	res := mustAppend(t, s, "o", "c", e)
	if got := res.Entries[0]; got.TraceID != testTraceID || got.SpanID != testSpanID {
		t.Errorf("Append returned ids %q %q", got.TraceID, got.SpanID)
	}
	if err := s.Verify(t.Context(), "o", "c"); err != nil {
		t.Errorf("Verify() = %v", err)
	}
}
