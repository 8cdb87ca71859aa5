package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

func TestAppend_RoundTrip(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		opts.Now = fakeClock()
		s := mustOpen(t, opts)
		ctx := t.Context()
		in := []Entry{
			{
				Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel,
				Actor: "peer-a", MessageID: "m-1", Role: RoleUser, TaskID: "task-1",
				Parts: []Part{
					{Kind: PartText, Text: "hello <b>&</b> wörld"},
					{Kind: PartData, Data: json.RawMessage(`{ "a" : [1, 2, "<x>"] }`)},
					{Kind: PartFile, Raw: []byte{0, 1, 2, 255}, MediaType: "application/octet-stream", Filename: "f.bin"},
					{Kind: PartFile, URL: "https://example.invalid/f", Metadata: json.RawMessage(`{"k":"v"}`)},
				},
				Metadata:      json.RawMessage(`{"trace": "abc"}`),
				CorrelationID: "corr-1",
			},
			{Kind: KindStatus, Trust: TrustSystem, Visibility: VisibilityAudit, TaskID: "task-1", State: "working"},
			{ID: "fixed-id", Kind: KindAgentReply, Trust: TrustAgent, Visibility: VisibilityModel, Role: RoleAgent,
				TaskID: "task-1", CausationID: "m-1", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)),
				Parts: []Part{{Kind: PartText, Text: "hi"}}},
		}
		res, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "tenant/a", BeginTurn: true, Entries: in})
		if err != nil {
			t.Fatalf("Append() error = %v, want nil", err)
		}
		if res.Epoch != 1 {
			t.Errorf("Append().Epoch = %d, want 1", res.Epoch)
		}
		if got, want := seqs(res.Entries), []uint64{1, 2, 3}; !cmp.Equal(got, want) {
			t.Errorf("Append() seqs = %v, want %v", got, want)
		}
		prev := ""
		for i, e := range res.Entries {
			if e.ContextID != "tenant/a" || e.Owner != "local" || e.Epoch != 1 || e.ID == "" || e.CreatedAt.IsZero() {
				t.Errorf("entry %d = %+v, want filled contextId, owner, epoch, id, createdAt", i, e)
			}
			if e.PrevHash != prev {
				t.Errorf("entry %d PrevHash = %q, want %q", i, e.PrevHash, prev)
			}
			prev = e.Hash
		}
		if got := res.Entries[2]; got.ID != "fixed-id" || !got.CreatedAt.Equal(in[2].CreatedAt) || got.CreatedAt.Location() != time.UTC {
			t.Errorf("entry 3 id/createdAt = %q %v, want fixed-id and the caller's time in UTC", got.ID, got.CreatedAt)
		}
		got, err := s.Range(ctx, "local", "tenant/a", 0, 0)
		if err != nil {
			t.Fatalf("Range() error = %v, want nil", err)
		}
		if diff := cmp.Diff(res.Entries, got); diff != "" {
			t.Errorf("Range() differs from Append() result (-want +got):\n%s", diff)
		}
		if err := s.Verify(ctx, "local", "tenant/a"); err != nil {
			t.Errorf("Verify() error = %v, want nil", err)
		}
		conv, err := s.Conversation(ctx, "local", "tenant/a")
		if err != nil {
			t.Fatalf("Conversation() error = %v, want nil", err)
		}
		want := Conversation{
			Key: contextid.Key("local", "tenant/a"), ContextID: "tenant/a", Owner: "local",
			CreatedAt: conv.CreatedAt, LastActivity: conv.LastActivity,
			LastSeq: 3, Epoch: 1, Entries: 3, Turns: 1, Tasks: 1, LastTaskID: "task-1",
		}
		if diff := cmp.Diff(want, conv); diff != "" {
			t.Errorf("Conversation() (-want +got):\n%s", diff)
		}
		// The caller's request is not modified.
		if in[0].ID != "" || in[0].Seq != 0 || in[1].CreatedAt != (time.Time{}) {
			t.Errorf("Append() modified the request entries: %+v", in[:2])
		}
	})
}

// TestAppend_StoredForm checks that the stored bytes are encoding/json's encoding of the
// entry (so re-encoding is stable) and that hash = sha256(prevHash ‖ JSON without hash).
func TestAppend_StoredForm(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	res := mustAppend(t, s, "local", "c", userMsg("a <b> & \u2028 c"), agentMsg("d"))
	err := s.db.View(func(tx *bolt.Tx) error {
		key := contextid.Key("local", "c")
		for i, e := range res.Entries {
			r, err := decodeLogRecord(tx.Bucket(bucketLog).Get(encodeSeq(logPos(t, tx, key, e.Seq))))
			if err != nil || r.seq != e.Seq {
				t.Fatalf("log record of seq %d: %+v, %v", e.Seq, r, err)
			}
			stored := r.entry
			want, err := json.Marshal(&e)
			if err != nil {
				return err
			}
			if string(stored) != string(want) {
				t.Errorf("stored entry %d = %s, want %s", i, stored, want)
			}
			e.Hash = ""
			canonical, _ := json.Marshal(&e)
			if h := chainHash(e.PrevHash, canonical); h != res.Entries[i].Hash {
				t.Errorf("entry %d hash = %s, want %s", i, res.Entries[i].Hash, h)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAppend_GapFreeSeqAcrossAppends(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		s := mustOpen(t, opts)
		var want []uint64
		for i := range 10 {
			res := mustAppend(t, s, "local", "c", numbered("m", i%3+1)...)
			want = append(want, seqs(res.Entries)...)
		}
		all, err := s.Range(t.Context(), "local", "c", 0, 0)
		if err != nil {
			t.Fatalf("Range() error = %v", err)
		}
		if diff := cmp.Diff(want, seqs(all)); diff != "" {
			t.Errorf("seqs (-want +got):\n%s", diff)
		}
		for i, e := range all {
			if e.Seq != uint64(i+1) {
				t.Fatalf("entry %d has seq %d, want %d", i, e.Seq, i+1)
			}
		}
	})
}

func TestAppend_Invalid(t *testing.T) {
	t.Parallel()
	ok := userMsg("x")
	with := func(f func(e *Entry)) []Entry {
		e := userMsg("x")
		f(&e)
		return []Entry{e}
	}
	tests := []struct {
		name  string
		req   AppendRequest
		field string // the error names it
	}{
		{"empty owner", AppendRequest{ContextID: "c", Entries: []Entry{ok}}, "owner"},
		{"owner control char", AppendRequest{Owner: "a\nb", ContextID: "c", Entries: []Entry{ok}}, "owner"},
		{"empty contextId", AppendRequest{Owner: "local", Entries: []Entry{ok}}, "contextId"},
		{"long contextId", AppendRequest{Owner: "local", ContextID: strings.Repeat("a", 257), Entries: []Entry{ok}}, "contextId"},
		{"bad utf8 contextId", AppendRequest{Owner: "local", ContextID: "a\xff", Entries: []Entry{ok}}, "contextId"},
		{"no entries", AppendRequest{Owner: "local", ContextID: "c"}, "entries"},
		{"empty kind", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Kind = "" })}, "entries[0].kind"},
		{"unknown kind", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Kind = "CHAT" })}, "entries[0].kind"},
		{"empty trust", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Trust = "" })}, "entries[0].trust"},
		{"unknown trust", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Trust = "TRUSTED" })}, "entries[0].trust"},
		{"empty visibility", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Visibility = "" })}, "entries[0].visibility"},
		{"unknown visibility", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Visibility = "PUBLIC" })}, "entries[0].visibility"},
		{"unknown role", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Role = "system" })}, "entries[0].role"},
		{"other contextId", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.ContextID = "d" })}, "entries[0].contextId"},
		{"other owner", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Owner = "x" })}, "entries[0].owner"},
		{"taskId control char", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.TaskID = "t\x00" })}, "entries[0].taskId"},
		{"bad metadata", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Metadata = json.RawMessage("{") })}, "entries[0].metadata"},
		{"part kind", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Parts[0].Kind = "image" })}, "entries[0].parts[0].kind"},
		{"part data", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Parts = []Part{{Kind: PartData, Data: json.RawMessage("nope")}} })}, "entries[0].parts[0].data"},
		{"artifact ref", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Parts = []Part{{Kind: PartText, ArtifactRef: "md5:x"}} })}, "entries[0].parts[0].artifactRef"},
		{"second entry", AppendRequest{Owner: "local", ContextID: "c", Entries: []Entry{ok, with(func(e *Entry) { e.Kind = "?" })[0]}}, "entries[1].kind"},
		{"long raw in text part", AppendRequest{Owner: "local", ContextID: "c", Entries: with(func(e *Entry) { e.Parts[0].Raw = make([]byte, 100) })}, "entries[0].parts[0].raw"},
	}
	s := mustOpen(t, Options{NoSync: true, LargePartBytes: 10})
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				_, err := s.Append(t.Context(), tt.req)
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Append() error = %v, want %v", err, ErrInvalid)
				}
				if !strings.Contains(err.Error(), tt.field) {
					t.Errorf("Append() error = %q, want it to name %q", err, tt.field)
				}
			})
		}
	})
	// Nothing was created by any of them.
	list, err := s.List(t.Context(), ListOptions{})
	if err != nil || len(list) != 0 {
		t.Errorf("List() = %v, %v, want no conversations", list, err)
	}
	if st := s.Stats(); st.Commits != 0 || st.Rejected != uint64(len(tests)) {
		t.Errorf("Stats() = %+v, want 0 commits and %d rejected", st, len(tests))
	}
	// tasks, artifacts, byid, push configs, push pending, running tasks, the log's five,
	// the owners list and the file's id (wal_ident.go)
	want := 13
	if n := countTopLevel(t, s); n != want {
		t.Errorf("%d top-level buckets and conversations, want %d (the indexes only)", n, want)
	}
}

func TestAppend_ContextIDErrorWrapsConversations(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	_, err := s.Append(t.Context(), AppendRequest{Owner: "local", ContextID: "a\x01", Entries: []Entry{userMsg("x")}})
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, contextid.ErrInvalid) {
		t.Fatalf("Append() error = %v, want both ErrInvalid and contextid.ErrInvalid", err)
	}
}

func TestFencing(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		s := mustOpen(t, opts)
		ctx := t.Context()
		req := func(begin bool, epoch uint64, text string) AppendRequest {
			return AppendRequest{Owner: "local", ContextID: "c", BeginTurn: begin, Epoch: epoch, Entries: []Entry{userMsg(text)}}
		}
		// A fresh conversation has epoch 0: a non-zero epoch is fenced and creates nothing.
		if _, err := s.Append(ctx, req(false, 1, "never")); !errors.Is(err, ErrFenced) {
			t.Fatalf("Append(epoch 1 on new conversation) error = %v, want %v", err, ErrFenced)
		}
		if _, err := s.Conversation(ctx, "local", "c"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Conversation() after fenced append error = %v, want %v", err, ErrNotFound)
		}
		r1, err := s.Append(ctx, req(true, 0, "turn 1"))
		if err != nil {
			t.Fatalf("Append(BeginTurn) error = %v", err)
		}
		e := r1.Epoch
		if r2, err := s.Append(ctx, req(false, e, "turn 1 reply")); err != nil || r2.Epoch != e || r2.Entries[0].Epoch != e {
			t.Fatalf("Append(epoch %d) = %+v, %v, want ok with epoch %d", e, r2, err, e)
		}
		r3, err := s.Append(ctx, req(true, 0, "turn 2"))
		if err != nil || r3.Epoch != e+1 {
			t.Fatalf("Append(BeginTurn) = epoch %d, %v, want %d", r3.Epoch, err, e+1)
		}
		for _, stale := range []uint64{e, e + 2} {
			if _, err := s.Append(ctx, req(false, stale, "stale")); !errors.Is(err, ErrFenced) {
				t.Errorf("Append(epoch %d) error = %v, want %v", stale, err, ErrFenced)
			}
		}
		if _, err := s.Append(ctx, req(false, 0, "unfenced audit")); err != nil {
			t.Errorf("Append(epoch 0) error = %v, want nil", err)
		}
		all, err := s.Range(ctx, "local", "c", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"turn 1", "turn 1 reply", "turn 2", "unfenced audit"}, texts(all)); diff != "" {
			t.Errorf("entries (-want +got):\n%s", diff)
		}
		if c, _ := s.Conversation(ctx, "local", "c"); c.Epoch != e+1 {
			t.Errorf("Conversation().Epoch = %d, want %d", c.Epoch, e+1)
		}
	})
}

func TestAppend_Closed(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		s, err := Open(t.TempDir()+"/l.db", opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, "local", "c", userMsg("x"))
		if err := s.Close(); err != nil {
			t.Fatalf("Close() error = %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close() error = %v, want nil", err)
		}
		if _, err := s.Append(t.Context(), AppendRequest{Owner: "local", ContextID: "c", Entries: []Entry{userMsg("y")}}); !errors.Is(err, ErrClosed) {
			t.Errorf("Append() after Close error = %v, want %v", err, ErrClosed)
		}
		if _, err := s.Range(t.Context(), "local", "c", 0, 0); !errors.Is(err, ErrClosed) {
			t.Errorf("Range() after Close error = %v, want %v", err, ErrClosed)
		}
	})
}

func TestAppend_CanceledContext(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		s := mustOpen(t, opts)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "c", Entries: []Entry{userMsg("x")}}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Append(canceled) error = %v, want %v", err, context.Canceled)
		}
		if _, err := s.Conversation(t.Context(), "local", "c"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Conversation() error = %v, want %v", err, ErrNotFound)
		}
	})
}

func TestOpen_InUse(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/l.db"
	mustOpenPath(t, path, testOpts)
	start := time.Now()
	s2, err := Open(path, testOpts, nil)
	if err == nil {
		s2.Close()
		t.Fatal("second Open() error = nil, want in use")
	}
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "data dir is in use by another process") {
		t.Errorf("second Open() error = %q, want ErrInUse saying the data dir is in use", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second Open() took %v, want about 1s", d)
	}
}

func TestReopen(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		path := t.TempDir() + "/l.db"
		s, err := Open(path, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		first, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "c", BeginTurn: true,
			Entries: []Entry{func() Entry { e := userMsg("one"); e.TaskID = "t1"; return e }(), agentMsg("two")}})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, "peer", "d", userMsg("other"))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		s = mustOpenPath(t, path, opts)
		got, err := s.Range(ctx, "local", "c", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first.Entries, got); diff != "" {
			t.Errorf("entries after reopen (-want +got):\n%s", diff)
		}
		// The chain and the epoch continue.
		next, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "c", Epoch: first.Epoch, Entries: []Entry{userMsg("three")}})
		if err != nil {
			t.Fatalf("Append() after reopen error = %v", err)
		}
		if e := next.Entries[0]; e.Seq != 3 || e.PrevHash != first.Entries[1].Hash {
			t.Errorf("entry after reopen seq %d prevHash %q, want 3 and %q", e.Seq, e.PrevHash, first.Entries[1].Hash)
		}
		if _, entries, err := s.TaskEntries(ctx, "t1"); err != nil || len(entries) != 1 {
			t.Errorf("TaskEntries(t1) = %d entries, %v, want 1", len(entries), err)
		}
		if n, err := s.VerifyAll(ctx); err != nil || n != 2 {
			t.Errorf("VerifyAll() = %d, %v, want 2, nil", n, err)
		}
	})
}

// TestAppend_ReturnsWhatReadsReturn: the entries Append returns are exactly (reflect.DeepEqual:
// nil versus empty slices, time zones and monotonic readings count) what Range, Last and
// TaskEntries read back, for entries whose JSON values have whitespace, HTML characters
// and U+2028, with empty slices, invalid UTF-8, times in other zones or with a monotonic
// reading, unicode, and a part moved to the artifact store.
func TestAppend_ReturnsWhatReadsReturn(t *testing.T) {
	t.Parallel()
	zone := time.FixedZone("odd", -(3*3600 + 25*60 + 7))
	corpus := []Entry{
		{
			Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel, Role: RoleUser,
			Actor: "pëer/α", MessageID: "m-ü",
			Metadata: json.RawMessage(" {\n\t\"a\" : [ 1, 2.50, \"<x> & y\" ],\r\n \"s\": \"\u2028\u2029\" } "),
			Parts: []Part{
				{Kind: PartText, Text: "héllo 世界 😀 <b>&</b>\u2028", Metadata: json.RawMessage(`{ "k" : "v" }`)},
				{Kind: PartData, Data: json.RawMessage("[ true , null, {\"x\" : \"\\u003c\"} ]")},
				{Kind: PartFile, Raw: []byte{0, 1, 2, 255}, MediaType: "application/octet-stream", Filename: "f\xffile.bin"},
				{Kind: PartFile, URL: "https://example.invalid/\xc3(", Raw: []byte{}},
			},
		},
		{Kind: KindStatus, Trust: TrustSystem, Visibility: VisibilityAudit, State: "working",
			Parts: []Part{}, Metadata: json.RawMessage{}},
		{Kind: KindAgentReply, Trust: TrustAgent, Visibility: VisibilityModel, Role: RoleAgent,
			CreatedAt: time.Date(2026, 3, 4, 5, 6, 7, 891011121, zone),
			Metadata:  json.RawMessage("null"),
			Parts:     []Part{{Kind: PartText, Text: "bad utf-8: \xff\xfe a\xc3 \xed\xa0\x80 end"}}},
		{Kind: KindToolCall, Trust: TrustAgent, Visibility: VisibilityAudit, CreatedAt: time.Now(), // monotonic reading
			Parts: []Part{{Kind: PartData, Data: json.RawMessage(`"just a string"`)}}},
		{Kind: KindToolResult, Trust: TrustAgent, Visibility: VisibilityModel, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.Local),
			Parts: []Part{{Kind: PartText, Text: strings.Repeat("long ü ", 40)}}}, // moves to the artifact store
		{Kind: KindAudit, Trust: TrustOperator, Visibility: VisibilityAudit, Metadata: json.RawMessage(`{}`),
			CorrelationID: "corr", CausationID: "cause"},
	}
	for i := range corpus {
		corpus[i].TaskID = "task-norm"
	}
	modes(t, func(t *testing.T, opts Options) {
		opts.LargePartBytes = 100
		s := mustOpen(t, opts)
		ctx := t.Context()
		res, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "norm", BeginTurn: true, Entries: corpus})
		if err != nil {
			t.Fatalf("Append() error = %v", err)
		}
		if ref := res.Entries[4].Parts[0].ArtifactRef; ref == "" {
			t.Fatalf("entry 5's long part was not moved to the artifact store")
		}
		ranged, err := s.Range(ctx, "local", "norm", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		last, err := s.Last(ctx, "local", "norm", len(corpus), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, byTask, err := s.TaskEntries(ctx, "task-norm")
		if err != nil {
			t.Fatal(err)
		}
		for name, got := range map[string][]Entry{"Range": ranged, "Last": last, "TaskEntries": byTask} {
			if !reflect.DeepEqual(res.Entries, got) {
				t.Errorf("%s() is not exactly what Append() returned (-append +%s):\n%s", name, name, cmp.Diff(res.Entries, got))
			}
		}
		if err := s.Verify(ctx, "local", "norm"); err != nil {
			t.Errorf("Verify() error = %v", err)
		}
	})
}
