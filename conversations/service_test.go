package conversations

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
)

// spy is the real ledger, counting the calls that read every conversation.
type spy struct {
	*ledger.Store
	lists atomic.Int32
}

func (s *spy) List(ctx context.Context, opts ledger.ListOptions) ([]ledger.Conversation, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, opts)
}

func openLedger(t *testing.T) (*ledger.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var n atomic.Int64
	led, err := ledger.Open(path, ledger.Options{NoSync: true, Now: func() time.Time {
		return start.Add(time.Duration(n.Add(1)) * time.Second)
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	return led, path
}

func turn(t *testing.T, led *ledger.Store, owner, contextID, text string) {
	t.Helper()
	_, err := led.Append(t.Context(), ledger.AppendRequest{Owner: owner, ContextID: contextID, Entries: []ledger.Entry{
		{TaskID: "t-" + owner + "-" + contextID + "-" + text, Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted,
			Visibility: ledger.VisibilityModel, Actor: owner, Role: ledger.RoleUser, Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}},
		{TaskID: "t-" + owner + "-" + contextID + "-" + text, Kind: ledger.KindAgentReply, Trust: ledger.TrustAgent,
			Visibility: ledger.VisibilityModel, Actor: "agent", Role: ledger.RoleAgent, Parts: []ledger.Part{{Kind: ledger.PartText, Text: "echo: " + text}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func contexts(p Page) []string {
	out := []string{}
	for _, c := range p.Conversations {
		out = append(out, c.Peer+"/"+c.ContextID)
	}
	return out
}

func TestList(t *testing.T) {
	t.Parallel()
	led, _ := openLedger(t)
	// Appended in this order: newest activity last.
	for _, c := range [][2]string{{"local", "a1"}, {"peer-x", "a2"}, {"local", "b1"}, {"out:p", "a3"}, {"local", "a4"}} {
		turn(t, led, c[0], c[1], "hi")
	}
	svc := New(led, Config{})
	tests := []struct {
		name string
		opts ListOptions
		want []string
	}{
		{"all", ListOptions{}, []string{"local/a4", "out:p/a3", "local/b1", "peer-x/a2", "local/a1"}},
		{"owner", ListOptions{Owner: "local"}, []string{"local/a4", "local/b1", "local/a1"}},
		{"prefix", ListOptions{Prefix: "a"}, []string{"local/a4", "out:p/a3", "peer-x/a2", "local/a1"}},
		{"owner and prefix", ListOptions{Owner: "local", Prefix: "a"}, []string{"local/a4", "local/a1"}},
		{"limit", ListOptions{Limit: 2}, []string{"local/a4", "out:p/a3"}},
		{"nothing", ListOptions{Owner: "nobody"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := svc.List(t.Context(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, contexts(got)); diff != "" {
				t.Errorf("List(%+v) (-want +got):\n%s", tt.opts, diff)
			}
		})
	}
}

func TestList_Paging(t *testing.T) {
	t.Parallel()
	led, _ := openLedger(t)
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		turn(t, led, "local", id, "hi")
	}
	svc := New(led, Config{})
	for _, prefix := range []string{"", "c"} {
		var got []string
		opts := ListOptions{Limit: 2, Prefix: prefix}
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("paging does not end")
			}
			p, err := svc.List(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, contexts(p)...)
			if p.Next == "" {
				break
			}
			opts.Cursor = p.Next
		}
		want := []string{"local/c5", "local/c4", "local/c3", "local/c2", "local/c1"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("pages of 2 (prefix %q) (-want +got):\n%s", prefix, diff)
		}
	}
	for _, bad := range []ListOptions{{Limit: -1}, {Cursor: "!!"}, {Cursor: "bm9jb21tYQ"}} {
		_, err := svc.List(t.Context(), bad)
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
			t.Errorf("List(%+v) error = %v, want a *FieldError", bad, err)
		}
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	led, _ := openLedger(t)
	turn(t, led, "local", "mine", "hi")
	turn(t, led, "peer-a", "shared", "a")
	turn(t, led, "out:http://x.example/", "shared", "x") // an owner no configuration names
	turn(t, led, "out:gone", "orphan", "o")
	sp := &spy{Store: led}
	svc := New(sp, Config{})
	tests := []struct {
		name      string
		ref       Ref
		wantOwner string
		check     func(error) bool
	}{
		{"one owner", Ref{ContextID: "mine"}, "local", nil},
		{"unknown owner resolves", Ref{ContextID: "orphan"}, "out:gone", nil},
		{"owner named", Ref{ContextID: "shared", Owner: "peer-a"}, "peer-a", nil},
		{"several owners", Ref{ContextID: "shared"}, "", func(err error) bool {
			var ae *AmbiguousError
			return errors.As(err, &ae) && errors.Is(err, ErrAmbiguous) && !errors.Is(err, ErrNotFound) &&
				cmp.Equal(ae.Owners, []string{"out:http://x.example/", "peer-a"}) && ae.ContextID == "shared"
		}},
		{"unknown", Ref{ContextID: "nope"}, "", func(err error) bool {
			var nf *NotFoundError
			return errors.As(err, &nf) && nf.ContextID == "nope" && err.Error() == `no such conversation: "nope"`
		}},
		{"wrong owner", Ref{ContextID: "mine", Owner: "peer-a"}, "", func(err error) bool {
			var nf *NotFoundError
			return errors.As(err, &nf) && nf.Owner == "peer-a"
		}},
		{"invalid", Ref{ContextID: strings.Repeat("x", 257)}, "", func(err error) bool {
			var fe *FieldError
			return errors.As(err, &fe) && fe.Field == "contextId" && strings.HasPrefix(fe.Reason, "at most 256 bytes")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := svc.Find(t.Context(), tt.ref)
			switch {
			case tt.check == nil && (err != nil || c.Owner != tt.wantOwner || c.ContextID != tt.ref.ContextID):
				t.Errorf("Find(%+v) = %q/%q, %v; want owner %q", tt.ref, c.Owner, c.ContextID, err, tt.wantOwner)
			case tt.check != nil && !tt.check(err):
				t.Errorf("Find(%+v) error = %#v (%v)", tt.ref, err, err)
			}
		})
	}
	if n := sp.lists.Load(); n != 0 {
		t.Errorf("Find listed every conversation %d times, want never", n)
	}
}

func TestShowExportVerifyReplay(t *testing.T) {
	t.Parallel()
	led, path := openLedger(t)
	turn(t, led, "local", "c", "first")
	turn(t, led, "local", "c", "second")
	if _, err := led.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "c", Entries: []ledger.Entry{
		{Kind: ledger.KindAudit, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit, Actor: "gateway",
			Parts: []ledger.Part{{Kind: ledger.PartText, Text: "rejected"}}},
	}}); err != nil {
		t.Fatal(err)
	}
	svc := New(led, Config{Policy: projection.Policy{HistoryLimit: 20}, Running: func(context.Context, string, string) string { return "task-9" }})
	ctx := t.Context()
	ref := Ref{ContextID: "c"}

	show, err := svc.Show(ctx, ref, ShowOptions{})
	if err != nil || len(show.Entries) != 4 || show.Conversation.RunningTask != "task-9" || show.Conversation.Turns != 2 {
		t.Errorf("Show() = %+v, %v; want 4 entries without the audit one, running task-9", show, err)
	}
	all, err := svc.Show(ctx, ref, ShowOptions{All: true, Limit: 2})
	if err != nil || len(all.Entries) != 2 || all.Entries[1].Kind != ledger.KindAudit {
		t.Errorf("Show(all, limit 2) = %+v, %v; want the newest 2 with the audit entry", all.Entries, err)
	}

	var buf bytes.Buffer
	if err := svc.Export(ctx, ref, &buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var first ledger.Entry
	if len(lines) != 5 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Seq != 1 {
		t.Errorf("Export() = %d lines, first %+v; want 5, seq 1 first", len(lines), first)
	}
	buf.Reset()
	if err := svc.Export(ctx, Ref{ContextID: "nope"}, &buf); !errors.Is(err, ErrNotFound) || buf.Len() != 0 {
		t.Errorf("Export(nope) = %v with %d bytes written, want ErrNotFound and nothing", err, buf.Len())
	}

	rep, err := svc.Verify(ctx, Ref{})
	if err != nil || !rep.OK || rep.Checked != 1 {
		t.Errorf("Verify(all) = %+v, %v", rep, err)
	}

	rp, err := svc.Replay(ctx, ref, 0)
	if err != nil || rp.Text != "second" || !strings.Contains(rp.Prompt, "first") || !strings.Contains(rp.Prompt, "second") {
		t.Errorf("Replay(latest) = %+v, %v; want the second turn with the first in its history", rp, err)
	}
	rp, err = svc.Replay(ctx, ref, 1)
	if err != nil || rp.Text != "first" || strings.Contains(rp.Prompt, "second") {
		t.Errorf("Replay(at 1) = %+v, %v; want the first turn alone", rp, err)
	}

	// A tampered chain is reported in the report, not as an error.
	if err := led.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every copy: the file may hold stale copies of the entry's page (free pages) before
	// the live one (ledger format 2 rewrites the log's last page as it grows).
	if err := os.WriteFile(path, bytes.ReplaceAll(raw, []byte(`"text":"first"`), []byte(`"text":"forgd"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	led2, err := ledger.Open(path, ledger.Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer led2.Close()
	rep, err = New(led2, Config{}).Verify(ctx, ref)
	if err != nil || rep.OK || len(rep.Problems) != 1 || rep.Problems[0].Seq != 1 || rep.Problems[0].ContextID != "c" {
		t.Errorf("Verify(tampered) = %+v, %v; want one problem at seq 1", rep, err)
	}
}

func TestReplay_NoTurn(t *testing.T) {
	t.Parallel()
	led, _ := openLedger(t)
	if _, err := led.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "c", Entries: []ledger.Entry{
		{Kind: ledger.KindAudit, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit, Actor: "gateway"},
	}}); err != nil {
		t.Fatal(err)
	}
	_, err := New(led, Config{}).Replay(t.Context(), Ref{ContextID: "c"}, 0)
	var nf *NotFoundError
	if !errors.As(err, &nf) || !nf.Turn {
		t.Errorf("Replay(no turn) error = %v, want a *NotFoundError for the turn", err)
	}
}

// countingLedger is the real ledger, counting the conversations its List returns.
type countingLedger struct {
	*ledger.Store
	listed atomic.Int64
}

func (c *countingLedger) List(ctx context.Context, opts ledger.ListOptions) ([]ledger.Conversation, error) {
	out, err := c.Store.List(ctx, opts)
	c.listed.Add(int64(len(out)))
	return out, err
}

// TestList_PagingFilters pages through owner and prefix filters whose matches are spread
// over more than one ledger read, and checks that a page without a prefix reads only its
// own conversations (and one more) from the ledger, wherever it starts.
func TestList_PagingFilters(t *testing.T) {
	t.Parallel()
	led, _ := openLedger(t)
	owners := []string{"local", "peer-x", "out:p"}
	for i := range 700 {
		id := fmt.Sprintf("y-%d", i)
		if i%97 == 0 {
			id = fmt.Sprintf("x-%d", i)
		}
		turn(t, led, owners[i%3], id, "hi")
	}
	cl := &countingLedger{Store: led}
	svc := New(cl, Config{})
	for _, opts := range []ListOptions{{}, {Owner: "peer-x"}, {Prefix: "x-"}, {Owner: "local", Prefix: "x-"}, {Prefix: "y-1"}, {Prefix: "none"}} {
		all, err := svc.List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		paged := opts
		paged.Limit = 7
		for pages := 0; ; pages++ {
			if pages > 200 {
				t.Fatal("paging does not end")
			}
			p, err := svc.List(t.Context(), paged)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, contexts(p)...)
			if p.Next == "" {
				break
			}
			paged.Cursor = p.Next
		}
		if diff := cmp.Diff(contexts(all), append([]string{}, got...)); diff != "" {
			t.Errorf("pages of 7 of %+v (-all +paged):\n%s", opts, diff)
		}
	}
	p1, _ := svc.List(t.Context(), ListOptions{Limit: 20})
	p2, _ := svc.List(t.Context(), ListOptions{Limit: 20, Cursor: p1.Next})
	before := cl.listed.Load()
	p3, err := svc.List(t.Context(), ListOptions{Limit: 20, Cursor: p2.Next})
	if err != nil || len(p3.Conversations) != 20 {
		t.Fatalf("page 3 = %d conversations, %v", len(p3.Conversations), err)
	}
	if n := cl.listed.Load() - before; n != 21 {
		t.Errorf("page 3 of 20 read %d conversations from the ledger, want 21", n)
	}
}
