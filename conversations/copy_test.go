package conversations

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
)

// beginTurn appends one turn (a user message and a reply) that begins a new epoch; big
// makes the reply a part over the large-part size (stored as an artifact).
func beginTurn(t *testing.T, led *ledger.Store, owner, contextID, text string, big bool) {
	t.Helper()
	reply := "echo: " + text
	if big {
		reply = strings.Repeat("r", ledger.DefaultLargePartBytes+1)
	}
	task := "t-" + contextID + "-" + text
	_, err := led.Append(t.Context(), ledger.AppendRequest{Owner: owner, ContextID: contextID, BeginTurn: true, Entries: []ledger.Entry{
		{TaskID: task, Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
			Actor: owner, Role: ledger.RoleUser, Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}},
		{TaskID: task, Kind: ledger.KindAgentReply, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel,
			Actor: "agent", Role: ledger.RoleAgent, Parts: []ledger.Part{{Kind: ledger.PartText, Text: reply}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// hashes returns every entry hash of every conversation of led, by owner and contextId.
func hashes(t *testing.T, led *ledger.Store) map[string][]string {
	t.Helper()
	convs, err := led.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, c := range convs {
		es, err := led.Range(t.Context(), c.Owner, c.ContextID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			out[c.Owner+"/"+c.ContextID] = append(out[c.Owner+"/"+c.ContextID], e.Hash)
		}
	}
	return out
}

// TestCopyLedger: every conversation is copied entry for entry with the same hashes
// (epochs, more entries than one copying append carries, an artifact); a second run finds
// them copied; a conversation copied in part is continued; a target that differs from
// the source is refused, naming the conversation, and left as it was.
func TestCopyLedger(t *testing.T) {
	t.Parallel()
	src, _ := openLedger(t)
	dst, _ := openLedger(t)
	for i := range copyBatch/2 + 10 { // past one batch of copyBatch entries
		beginTurn(t, src, "alice", "long", fmt.Sprint(i), false)
	}
	beginTurn(t, src, "bob", "big", "large reply", true)
	beginTurn(t, src, "bob", "big", "again", false)

	var copied []string
	n, err := CopyLedger(t.Context(), src, dst, func(c ledger.Conversation) { copied = append(copied, c.Owner+"/"+c.ContextID) })
	if err != nil || n != 2 || len(copied) != 2 {
		t.Fatalf("CopyLedger() = %d, %v (copied %v), want 2 conversations", n, err, copied)
	}
	want := hashes(t, src)
	if got := hashes(t, dst); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the copy's hashes differ from the source's:\n got %v\nwant %v", got, want)
	}

	// Copied already: verified and skipped.
	if n, err := CopyLedger(t.Context(), src, dst, nil); err != nil || n != 2 {
		t.Fatalf("CopyLedger() again = %d, %v, want 2, nil", n, err)
	}
	// Copied in part: continued.
	beginTurn(t, src, "bob", "big", "third", false)
	if n, err := CopyLedger(t.Context(), src, dst, nil); err != nil || n != 2 {
		t.Fatalf("CopyLedger() after a new turn = %d, %v, want 2, nil", n, err)
	}
	want = hashes(t, src)
	if got := hashes(t, dst); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the continued copy's hashes differ from the source's:\n got %v\nwant %v", got, want)
	}

	// A target that is not a copy of the source.
	other, _ := openLedger(t)
	beginTurn(t, other, "bob", "big", "something else", false)
	before := hashes(t, other)
	_, err = CopyLedger(t.Context(), src, other, nil)
	if err == nil || !strings.Contains(err.Error(), `conversation "big" (peer "bob")`) || !strings.Contains(err.Error(), "not a copy of it") {
		t.Errorf("CopyLedger() into a different target = %v, want an error naming the conversation", err)
	}
	if got := hashes(t, other); fmt.Sprint(got["bob/big"]) != fmt.Sprint(before["bob/big"]) {
		t.Errorf("the refused target's conversation changed: %v, was %v", got["bob/big"], before["bob/big"])
	}
	if errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("CopyLedger() error %v is a not-found", err)
	}
}
