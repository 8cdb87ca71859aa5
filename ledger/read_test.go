package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

func TestLast(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	// 1..20: odd seqs are user messages, even are agent replies; seq 20 is audit-only.
	var entries []Entry
	for i := 1; i <= 20; i++ {
		e := userMsg(fmt.Sprint(i))
		if i%2 == 0 {
			e = agentMsg(fmt.Sprint(i))
		}
		if i == 19 {
			e.Visibility = VisibilityAudit
		}
		entries = append(entries, e)
	}
	mustAppend(t, s, "local", "c", entries...)
	users := func(e *Entry) bool { return e.Kind == KindUserMessage && e.Visibility == VisibilityModel }
	tests := []struct {
		name string
		n    int
		keep func(*Entry) bool
		want []string
	}{
		{"newest 3", 3, nil, []string{"18", "19", "20"}},
		{"filtered newest 3", 3, users, []string{"13", "15", "17"}},
		{"more than exist", 50, users, []string{"1", "3", "5", "7", "9", "11", "13", "15", "17"}},
		{"zero is none, not all", 0, nil, nil},
		{"none match", 5, func(*Entry) bool { return false }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Last(t.Context(), "local", "c", tt.n, tt.keep)
			if err != nil {
				t.Fatalf("Last() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, texts(got), cmpNilEmpty); diff != "" {
				t.Errorf("Last(%d) (-want +got):\n%s", tt.n, diff)
			}
		})
	}
	t.Run("stops after n matches", func(t *testing.T) {
		t.Parallel()
		visited := 0
		_, err := s.Last(t.Context(), "local", "c", 2, func(e *Entry) bool { visited++; return true })
		if err != nil || visited != 2 {
			t.Errorf("Last(2) visited %d entries (%v), want 2", visited, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		if _, err := s.Last(t.Context(), "local", "missing", 1, nil); !errors.Is(err, ErrNotFound) {
			t.Errorf("Last(missing) error = %v, want %v", err, ErrNotFound)
		}
		if _, err := s.Last(t.Context(), "local", "c", -1, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("Last(-1) error = %v, want %v", err, ErrInvalid)
		}
	})
}

var cmpNilEmpty = cmp.Transformer("nilEmpty", func(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
})

func TestRange(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	mustAppend(t, s, "local", "c", numbered("m", 10)...)
	tests := []struct {
		name     string
		after    uint64
		limit    int
		wantSeqs []uint64
	}{
		{"all", 0, 0, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"after 7", 7, 0, []uint64{8, 9, 10}},
		{"after 2 limit 3", 2, 3, []uint64{3, 4, 5}},
		{"after last", 10, 0, nil},
		{"after max", ^uint64(0), 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Range(t.Context(), "local", "c", tt.after, tt.limit)
			if err != nil {
				t.Fatalf("Range() error = %v", err)
			}
			if diff := cmp.Diff(tt.wantSeqs, seqs(got), cmp.Transformer("nilEmpty", func(s []uint64) []uint64 {
				if len(s) == 0 {
					return nil
				}
				return s
			})); diff != "" {
				t.Errorf("Range(%d, %d) seqs (-want +got):\n%s", tt.after, tt.limit, diff)
			}
		})
	}
	if _, err := s.Range(t.Context(), "local", "nope", 0, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Range(missing) error = %v, want %v", err, ErrNotFound)
	}
}

func TestTasks(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		s := mustOpen(t, opts)
		ctx := t.Context()
		task := func(e Entry, id string) Entry { e.TaskID = id; return e }
		// Task ids sort differently from their creation order on purpose.
		mustAppend(t, s, "local", "c", task(userMsg("z1"), "task-z"), task(agentMsg("z2"), "task-z"))
		mustAppend(t, s, "local", "c", task(userMsg("a1"), "task-a"), userMsg("no task"))
		mustAppend(t, s, "local", "c", task(agentMsg("a2"), "task-a"), task(userMsg("m1"), "task-m"), task(agentMsg("z3"), "task-z"))
		mustAppend(t, s, "peer", "c", task(userMsg("other owner"), "task-o"))

		ids, err := s.TaskIDs(ctx, "local", "c")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"task-z", "task-a", "task-m"}, ids); diff != "" {
			t.Errorf("TaskIDs() (-want +got):\n%s", diff)
		}
		conv, got, err := s.TaskEntries(ctx, "task-z")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"z1", "z2", "z3"}, texts(got)); diff != "" {
			t.Errorf("TaskEntries(task-z) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]uint64{1, 2, 7}, seqs(got)); diff != "" {
			t.Errorf("TaskEntries(task-z) seqs (-want +got):\n%s", diff)
		}
		if conv.ContextID != "c" || conv.Owner != "local" || conv.Tasks != 3 || conv.LastTaskID != "task-m" {
			t.Errorf("TaskEntries(task-z) conversation = %+v, want c/local with 3 tasks, last task-m", conv)
		}
		if conv, _, err := s.TaskEntries(ctx, "task-o"); err != nil || conv.Owner != "peer" {
			t.Errorf("TaskEntries(task-o) = %+v, %v, want owner peer", conv, err)
		}
		for _, id := range []string{"task-nope", "", "task"} {
			if _, _, err := s.TaskEntries(ctx, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("TaskEntries(%q) error = %v, want %v", id, err, ErrNotFound)
			}
		}
		// A task belongs to one conversation.
		_, err = s.Append(ctx, AppendRequest{Owner: "local", ContextID: "other", Entries: []Entry{task(userMsg("steal"), "task-a")}})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Append(task of another conversation) error = %v, want %v", err, ErrInvalid)
		}
		if _, err := s.Conversation(ctx, "local", "other"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Conversation(other) error = %v, want %v (nothing created)", err, ErrNotFound)
		}
	})
}

func TestArtifacts(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		opts.LargePartBytes = 1024
		s := mustOpen(t, opts)
		ctx := t.Context()
		long := strings.Repeat("long text ", 200) // 2000 bytes
		blob := bytes.Repeat([]byte{0xde, 0xad}, 1000)
		small := strings.Repeat("s", 1024) // exactly the limit: stays inline
		e := userMsg(long)
		e.Parts = append(e.Parts,
			Part{Kind: PartFile, Raw: blob, MediaType: "application/octet-stream"},
			Part{Kind: PartText, Text: small},
			Part{Kind: PartText, Text: long}, // same content: one artifact
		)
		res := mustAppend(t, s, "local", "c", e)
		mustAppend(t, s, "local", "d", userMsg(long)) // same content in another conversation

		stored := res.Entries[0].Parts
		for _, i := range []int{0, 1, 3} {
			p := stored[i]
			if !strings.HasPrefix(p.ArtifactRef, "sha256:") || p.Text != "" || p.Raw != nil {
				t.Errorf("stored part %d = %+v, want a reference without content", i, p)
			}
		}
		if stored[0].Size != int64(len(long)) || stored[1].Size != int64(len(blob)) {
			t.Errorf("stored sizes = %d, %d, want %d, %d", stored[0].Size, stored[1].Size, len(long), len(blob))
		}
		if stored[2].Text != small || stored[2].ArtifactRef != "" {
			t.Errorf("part at the limit = %+v, want inline", stored[2])
		}
		if stored[0].ArtifactRef != stored[3].ArtifactRef {
			t.Errorf("identical content got refs %s and %s", stored[0].ArtifactRef, stored[3].ArtifactRef)
		}
		if err := s.db.View(func(tx *bolt.Tx) error {
			if n := tx.Bucket(bucketArtifacts).Stats().KeyN; n != 2 {
				t.Errorf("artifact store holds %d artifacts, want 2 (deduplicated)", n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}

		got, err := s.LoadArtifact(ctx, stored[1].ArtifactRef)
		if err != nil || !bytes.Equal(got, blob) {
			t.Errorf("LoadArtifact() = %d bytes, %v, want the blob", len(got), err)
		}
		entries, err := s.Range(ctx, "local", "c", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Inflate(ctx, entries); err != nil {
			t.Fatalf("Inflate() error = %v", err)
		}
		p := entries[0].Parts
		if p[0].Text != long || !bytes.Equal(p[1].Raw, blob) || p[2].Text != small || p[3].Text != long {
			t.Errorf("Inflate() did not restore the content")
		}
		if p[0].ArtifactRef == "" || p[0].Size != int64(len(long)) {
			t.Errorf("Inflate() dropped ArtifactRef/Size: %+v", p[0].ArtifactRef)
		}
		if err := s.Verify(ctx, "local", "c"); err != nil {
			t.Errorf("Verify() error = %v", err)
		}

		missing := "sha256:" + strings.Repeat("0", 64)
		if _, err := s.LoadArtifact(ctx, missing); !errors.Is(err, ErrNotFound) {
			t.Errorf("LoadArtifact(missing) error = %v, want %v", err, ErrNotFound)
		}
		if _, err := s.LoadArtifact(ctx, "sha256:xyz"); !errors.Is(err, ErrInvalid) {
			t.Errorf("LoadArtifact(malformed) error = %v, want %v", err, ErrInvalid)
		}
		bad := []Entry{{Parts: []Part{{Kind: PartText, ArtifactRef: missing}}}}
		if err := s.Inflate(ctx, bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("Inflate(missing ref) error = %v, want %v", err, ErrNotFound)
		}
	})
}

func TestList(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, Options{NoSync: true, Now: fakeClock()})
	ctx := t.Context()
	mustAppend(t, s, "local", "old", userMsg("1"))
	mustAppend(t, s, "peer", "middle", userMsg("2"))
	mustAppend(t, s, "local", "new", userMsg("3"))
	mustAppend(t, s, "local", "old", agentMsg("4")) // old becomes the most recent
	tests := []struct {
		name string
		opts ListOptions
		want []string
	}{
		{"all", ListOptions{}, []string{"old", "new", "middle"}},
		{"limit", ListOptions{Limit: 2}, []string{"old", "new"}},
		{"owner", ListOptions{Owner: "local"}, []string{"old", "new"}},
		{"unknown owner", ListOptions{Owner: "nobody"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			list, err := s.List(t.Context(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range list {
				got = append(got, c.ContextID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("List(%+v) (-want +got):\n%s", tt.opts, diff)
			}
		})
	}
	if _, err := s.List(ctx, ListOptions{Limit: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("List(limit -1) error = %v, want %v", err, ErrInvalid)
	}
	c, err := s.Conversation(ctx, "local", "old")
	if err != nil || c.Entries != 2 || c.Turns != 1 || !c.LastActivity.After(c.CreatedAt) {
		t.Errorf("Conversation(old) = %+v, %v, want 2 entries, 1 turn, activity after creation", c, err)
	}
}

// TestTaskIDs_BrokenChain: a task index whose links loop or leave the conversation is
// reported, not followed forever.
func TestTaskIDs_BrokenChain(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		head func(key string) []byte
	}{
		{"loop", func(key string) []byte { return taskHead(key, "t2") }},
		{"other conversation", func(string) []byte { return taskHead(contextid.Key("local", "other"), "") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustOpen(t, testOpts)
			e1, e2 := userMsg("1"), userMsg("2")
			e1.TaskID, e2.TaskID = "t1", "t2"
			mustAppend(t, s, "local", "c", e1, e2)
			if ids, err := s.TaskIDs(t.Context(), "local", "c"); err != nil || !cmp.Equal(ids, []string{"t1", "t2"}) {
				t.Fatalf("TaskIDs() = %v, %v, want [t1 t2]", ids, err)
			}
			if err := s.db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketTasks).Put([]byte("t1"), tt.head(contextid.Key("local", "c")))
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.TaskIDs(t.Context(), "local", "c"); !errors.Is(err, ErrChainBroken) {
				t.Errorf("TaskIDs() error = %v, want %v", err, ErrChainBroken)
			}
		})
	}
}

func TestLastBefore(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, Options{NoSync: true})
	for i := range 10 {
		if _, err := s.Append(t.Context(), AppendRequest{Owner: "local", ContextID: "lb", Entries: []Entry{textEntry(KindUserMessage, fmt.Sprint("m", i+1))}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		before uint64
		n      int
		want   []uint64
	}{
		{0, 3, []uint64{8, 9, 10}},
		{5, 3, []uint64{2, 3, 4}},
		{2, 5, []uint64{1}},
		{1, 5, nil},
		{11, 2, []uint64{9, 10}},
		{99, 2, []uint64{9, 10}},
	} {
		got, err := s.LastBefore(t.Context(), "local", "lb", tc.before, tc.n, nil)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		if !slices.Equal(seqs, tc.want) {
			t.Errorf("LastBefore(%d, %d) seqs = %v, want %v", tc.before, tc.n, seqs, tc.want)
		}
	}
}
