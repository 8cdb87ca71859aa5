package ledger

// The entry and file formats pinned: the hash format by one frozen entry
// (testdata/frozen_entry.json and .hash), and format 1 by a small ledger written by a
// build that wrote it (testdata/v1-ledger.db, frozen: no build writes format 1 any
// more), which Open upgrades to format 2 and whose entries must then verify and read back
// as listed in testdata/v1-ledger.golden, as the same appends made now read back. A
// change to Entry's fields or their order, to the hand-written encoder, to the hash, or
// to what the upgrade reads fails here. Regenerate the frozen entry and the listing (only
// for a deliberate, versioned format change) with
//
//	go test ./ledger -run 'TestFrozen|TestV1Ledger' -update

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the frozen entry and the v1 ledger's listing in testdata/ (a deliberate format change only)")

const (
	frozenEntryFile = "testdata/frozen_entry.json"
	frozenHashFile  = "testdata/frozen_entry.hash"
	v1LedgerFile    = "testdata/v1-ledger.db"
	v1GoldenFile    = "testdata/v1-ledger.golden"
)

// frozenEntry sets every field of Entry and of Part (every part kind, an artifact
// reference, metadata on both, correlation ids), with text that needs escaping, as Append
// would store it at seq 7 after an entry whose hash is PrevHash.
func frozenEntry() Entry {
	return Entry{
		ID:         "0190f5c4-7d1e-7c3a-9f00-000000000007",
		ContextID:  "tenant/a <über> & \u2028 ctx",
		Owner:      "peer-b",
		TaskID:     "task-3",
		Seq:        7,
		Epoch:      2,
		Kind:       KindToolResult,
		Trust:      TrustAgent,
		Visibility: VisibilityModel,
		Actor:      "agent:relay",
		CreatedAt:  time.Date(2026, 3, 12, 9, 30, 0, 123_456_789, time.UTC),
		MessageID:  "msg-7",
		Role:       RoleAgent,
		State:      "working",
		Parts: []Part{
			{Kind: PartText, Text: "line 1\nline 2\t\"quoted\" <b> \x01 é", Metadata: json.RawMessage(`{"lang":"en"}`)},
			{Kind: PartData, Data: json.RawMessage(`{"n":1,"list":[true,null,"x\u003cy"]}`)},
			{Kind: PartFile, Raw: []byte{0, 1, 2, 0xfe, 0xff}, MediaType: "application/octet-stream", Filename: "blob.bin"},
			{Kind: PartFile, URL: "https://files.example/report.pdf?a=1\u0026b=2", MediaType: "application/pdf", Filename: "report.pdf"},
			{Kind: PartText, ArtifactRef: "sha256:" + strings.Repeat("ab", 32), Size: 70000, MediaType: "text/plain"},
		},
		Metadata:      json.RawMessage(`{"source":"test","nested":{"k":[1,2]}}`),
		CorrelationID: "corr-1",
		CausationID:   "cause-6",
		PrevHash:      strings.Repeat("0f", 32),
	}
}

// encodeFrozen returns the stored JSON and the hash of e by the production path: the
// template Append builds before the transaction, filled as the committer fills it.
func encodeFrozen(t *testing.T, e Entry) (stored []byte, hash string) {
	t.Helper()
	seq, epoch, prev := e.Seq, e.Epoch, e.PrevHash
	e.Seq, e.Epoch, e.PrevHash, e.Hash = 0, 0, "", ""
	tmpl, err := newTemplate(&e)
	if err != nil {
		t.Fatalf("newTemplate() error = %v", err)
	}
	f, hash := tmpl.fill(seq, epoch, prev)
	return f.stored(), hash
}

func TestFrozenEntry(t *testing.T) {
	e := frozenEntry()
	if err := validateEntry(0, &e, e.Owner, e.ContextID); err != nil {
		t.Fatalf("the frozen entry is not valid: %v", err)
	}
	stored, hash := encodeFrozen(t, e)
	if *update {
		writeFile(t, frozenEntryFile, append(bytes.Clone(stored), '\n'))
		writeFile(t, frozenHashFile, []byte(hash+"\n"))
	}
	wantStored := bytes.TrimSuffix(readFile(t, frozenEntryFile), []byte("\n"))
	wantHash := strings.TrimSpace(string(readFile(t, frozenHashFile)))

	// The encoder Append uses.
	if diff := cmp.Diff(string(wantStored), string(stored)); diff != "" {
		t.Errorf("the stored encoding of the frozen entry changed: the ledger's entry format would no longer be written (-want +got):\n%s", diff)
	}
	if hash != wantHash {
		t.Errorf("the hash of the frozen entry = %s, want %s: every existing ledger would fail verify", hash, wantHash)
	}

	// The path Verify takes: encoding/json of the entry (Entry's field order and tags)
	// without its hash, then the chain hash.
	e.Hash = ""
	canonical, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	if got := chainHash(e.PrevHash, canonical); got != wantHash {
		t.Errorf("Verify's recomputed hash = %s, want %s (has Entry's field order or a tag changed?)", got, wantHash)
	}
	e.Hash = wantHash
	if full, _ := json.Marshal(&e); !bytes.Equal(full, wantStored) {
		t.Errorf("json.Marshal(frozen entry) differs from the stored encoding:\n got %s\nwant %s", full, wantStored)
	}

	// Old data reads back into the same entry.
	var back Entry
	if err := json.Unmarshal(wantStored, &back); err != nil {
		t.Fatalf("the frozen entry does not decode: %v", err)
	}
	if diff := cmp.Diff(e, back); diff != "" {
		t.Errorf("the frozen entry decodes differently (-want +got):\n%s", diff)
	}
}

// v1Conversation is one conversation of the format-1 fixture and what to append to it.
type v1Conversation struct {
	owner, contextID string
	turns            [][]Entry // each turn one Append with BeginTurn
}

// v1Fixture is the content of testdata/v1-ledger.db: three conversations (two owners
// sharing a contextId, an outbound one), turns over several tasks, every part kind, an
// artifact (a text part over LargePartBytes), audit and error entries.
func v1Fixture() []v1Conversation {
	at := time.Date(2026, 3, 12, 9, 0, 0, 0, time.UTC)
	n := 0
	ent := func(kind Kind, task string, parts ...Part) Entry {
		n++
		e := textEntry(kind, "")
		e.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
		e.TaskID = task
		e.CreatedAt = at.Add(time.Duration(n) * time.Second)
		e.MessageID = fmt.Sprintf("m-%d", n)
		e.Parts = parts
		return e
	}
	text := func(s string) Part { return Part{Kind: PartText, Text: s} }
	status := func(task, state string) Entry {
		e := ent(KindStatus, task)
		e.Role, e.State, e.Trust, e.MessageID = "", state, TrustSystem, ""
		return e
	}
	audit := ent(KindAudit, "", text("rejected: context busy"))
	audit.Visibility, audit.Trust, audit.Role, audit.Actor = VisibilityAudit, TrustSystem, "", "gateway"
	audit.Metadata = json.RawMessage(`{"reason":"CONTEXT_BUSY"}`)
	failure := ent(KindError, "t-5", text("upstream failed"))
	failure.Visibility, failure.CausationID = VisibilityAudit, "m-1"
	tool := ent(KindToolCall, "t-2", Part{Kind: PartData, Data: json.RawMessage(`{"tool":"lookup","args":{"q":"x"}}`)})
	tool.CorrelationID = "call-1"
	result := ent(KindToolResult, "t-2", Part{Kind: PartFile, Raw: []byte("%PDF-1.7\n"), MediaType: "application/pdf", Filename: "r.pdf"})
	result.CorrelationID, result.CausationID = "call-1", tool.ID
	return []v1Conversation{
		{owner: "local", contextID: "tenant/a", turns: [][]Entry{
			{ent(KindUserMessage, "t-1", text("hello")), status("t-1", "working"), ent(KindAgentReply, "t-1", text("hi there")), status("t-1", "completed")},
			{ent(KindUserMessage, "t-2", text("look it up"), Part{Kind: PartFile, URL: "https://files.example/a.txt", MediaType: "text/plain"}), tool, result,
				ent(KindAgentReply, "t-2", text(strings.Repeat("a long reply ", 20)))},
		}},
		{owner: "peer-b", contextID: "tenant/a", turns: [][]Entry{
			{ent(KindUserMessage, "t-3", text("same contextId, other owner")), ent(KindAgentReply, "t-3", text("a separate conversation"))},
			{audit},
		}},
		{owner: "out:macmini", contextID: "über/ctx-3", turns: [][]Entry{
			{ent(KindUserMessage, "t-4", text("outbound <question> & more")), ent(KindReplyChunk, "t-4", text("part 1")), ent(KindAgentReply, "t-4", text("part 1 part 2"))},
			{ent(KindUserMessage, "t-5", text("again")), failure},
		}},
	}
}

// v1Options are the options the fixture was written with: the fixed clock and a small
// LargePartBytes, so the long reply goes to the artifact store.
func v1Options() Options {
	return Options{NoSync: true, LargePartBytes: 200, Now: fakeClock()}
}

// appendV1Fixture appends the fixture's turns to s (opened with v1Options).
func appendV1Fixture(t *testing.T, s *Store) {
	t.Helper()
	for _, c := range v1Fixture() {
		for _, turn := range c.turns {
			if _, err := s.Append(t.Context(), AppendRequest{Owner: c.owner, ContextID: c.contextID, BeginTurn: true, Entries: turn}); err != nil {
				t.Fatalf("Append(%s, %s) error = %v", c.owner, c.contextID, err)
			}
		}
	}
}

// listLedger is the golden listing of a ledger: every conversation (List order) with its
// summary and its entries as stored, one JSON document per line.
func listLedger(ctx context.Context, t *testing.T, s *Store) string {
	t.Helper()
	convs, err := s.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range convs {
		head, _ := json.Marshal(c)
		fmt.Fprintf(&b, "conversation %s\n", head)
		entries, err := s.Range(ctx, c.Owner, c.ContextID, 0, 0)
		if err != nil {
			t.Fatalf("Range(%s, %s) error = %v", c.Owner, c.ContextID, err)
		}
		for _, e := range entries {
			line, _ := json.Marshal(e)
			fmt.Fprintf(&b, "%s\n", line)
		}
	}
	return b.String()
}

func TestV1Ledger(t *testing.T) {
	// A copy: Open upgrades it to format 2.
	path := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, v1LedgerFile, path)
	s := mustOpenPath(t, path, Options{NoSync: true})
	ctx := t.Context()

	checked, err := s.VerifyAll(ctx)
	if err != nil || checked != len(v1Fixture()) {
		t.Fatalf("VerifyAll(v1 ledger) = %d, %v; want %d, nil", checked, err, len(v1Fixture()))
	}
	for _, c := range v1Fixture() {
		if err := s.Verify(ctx, c.owner, c.contextID); err != nil {
			t.Errorf("Verify(%s, %s) error = %v, want nil", c.owner, c.contextID, err)
		}
	}
	got := listLedger(ctx, t, s)
	if *update {
		writeFile(t, v1GoldenFile, []byte(got))
	}
	if diff := cmp.Diff(string(readFile(t, v1GoldenFile)), got); diff != "" {
		t.Errorf("the v1 ledger reads back differently (-want +got):\n%s", diff)
	}

	// The same content written by this build lists the same (the fixture is what the
	// current code writes, not only what it reads).
	fresh := mustOpen(t, v1Options())
	appendV1Fixture(t, fresh)
	if diff := cmp.Diff(got, listLedger(ctx, t, fresh)); diff != "" {
		t.Errorf("this build writes the fixture differently from the v1 ledger (-v1 +now):\n%s", diff)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate the fixtures with -update)", err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatalf("%v (generate the fixtures with -update)", err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
