package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
)

// userMsg is a user message of task with messageId id and the given parts.
func userMsg(task, id string, parts ...ledger.Part) ledger.Entry {
	e := msg("")
	e.TaskID, e.MessageID, e.Parts = task, id, parts
	return e
}

func text(s string) ledger.Part { return ledger.Part{Kind: ledger.PartText, Text: s} }

// testDedup: an append with Dedup whose user message repeats the conversation's latest
// one (messageId and parts) appends nothing and names its task; anything else appends.
func testDedup(t *testing.T, s Store) {
	ctx := context.Background()
	const conv = "dedup"
	big := strings.Repeat("large ", LargePartBytes/3) // moved to the artifact store
	data := ledger.Part{Kind: ledger.PartData, Data: []byte(`{"a": 1}`)}
	turn := func(conv, task, id string, parts ...ledger.Part) ledger.AppendRequest {
		return ledger.AppendRequest{Owner: "o", ContextID: conv, BeginTurn: true, Dedup: true,
			Entries: []ledger.Entry{userMsg(conv+task, id, parts...), status(conv+task, "working")}}
	}
	lastSeq := func(conv string) uint64 {
		c, err := s.Conversation(ctx, "o", conv)
		if err != nil {
			t.Fatal(err)
		}
		return c.LastSeq
	}
	mustAppend(t, s, turn(conv, "t1", "m1", text("hello"), text(big), data)) // a new conversation: nothing to repeat
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: conv, Entries: []ledger.Entry{status(conv+"t1", "completed")}})
	before := lastSeq(conv)

	sameData := data
	sameData.Data = []byte(`{ "a":1 }`) // the same JSON value
	sameData.Metadata = []byte(`{"note": "metadata is not compared"}`)
	_, err := s.Append(ctx, turn(conv, "t2", "m1", text("hello"), text(big), sameData))
	var repeat *ledger.RepeatError
	if !errors.As(err, &repeat) || repeat.TaskID != conv+"t1" || repeat.MessageID != "m1" || repeat.ContextID != conv || repeat.State != "completed" {
		t.Fatalf("repeated message: Append error = %+v, want a *RepeatError naming task t1, completed", err)
	}
	if got := lastSeq(conv); got != before {
		t.Fatalf("a refused repeat moved the conversation from seq %d to %d", before, got)
	}

	// Each differs from the latest message (m1: hello, big, data) in one thing.
	for i, c := range []struct {
		name  string
		id    string
		parts []ledger.Part
	}{
		{"other text", "m1", []ledger.Part{text("hello!"), text(big), data}},
		{"other large part", "m1", []ledger.Part{text("hello"), text(big + "!"), data}},
		{"other data", "m1", []ledger.Part{text("hello"), text(big), {Kind: ledger.PartData, Data: []byte(`{"a":2}`)}}},
		{"fewer parts", "m1", []ledger.Part{text("hello"), text(big)}},
		{"another messageId", "m2", []ledger.Part{text("hello"), text(big), data}},
	} {
		other := fmt.Sprint(conv, "-", i)
		mustAppend(t, s, turn(other, "t1", "m1", text("hello"), text(big), data))
		if _, err := s.Append(ctx, turn(other, "t2", c.id, c.parts...)); err != nil {
			t.Fatalf("%s: Append error = %v, want it appended", c.name, err)
		}
	}
	// An older message than the latest is appended.
	mustAppend(t, s, turn(conv, "t3", "m3", text("newer")))
	mustAppend(t, s, turn(conv, "t4", "m1", text("hello"), text(big), data))
	// Without Dedup, the same message again is appended.
	req := turn(conv, "t5", "m1", text("hello"), text(big), data)
	req.Dedup = false
	mustAppend(t, s, req)

	// The latest user message beyond DedupWindow entries is not found.
	mustAppend(t, s, turn(conv, "t9", "m9", text("far")))
	chunks := make([]ledger.Entry, ledger.DedupWindow)
	for i := range chunks {
		chunks[i] = status(conv+"t9", "working")
	}
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: conv, Entries: chunks})
	if _, err := s.Append(ctx, turn(conv, "t10", "m9", text("far"))); err != nil {
		t.Fatalf("repeat beyond the window: Append error = %v, want it appended", err)
	}
	if _, err := s.Append(ctx, turn(conv, "t11", "m9", text("far"))); !errors.As(err, &repeat) || repeat.TaskID != conv+"t10" || repeat.State != "working" {
		t.Fatalf("repeat of the latest: Append error = %v, want a *RepeatError naming t10", err)
	}
	if err := s.Verify(ctx, "o", conv); err != nil {
		t.Fatalf("Verify() = %v", err)
	}
}
