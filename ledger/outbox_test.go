package ledger_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/ledgertest"
)

// TestSalvageKeepsPushIndexes: a salvage's copy rebuilds the push indexes from the
// entries it copies, so configs and pending deliveries survive it.
func TestSalvageKeepsPushIndexes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "salvaged.db")
	s, err := ledger.Open(src, ledger.Options{NoSync: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{
		ledgertest.PushConfigEntry("t", ledger.PushConfig{ID: "a", URL: "https://a", Dialect: "1.0"}),
		ledgertest.PushConfigEntry("t", ledger.PushConfig{ID: "b", URL: "https://b", Dialect: "1.0"}),
		ledgertest.PushOutboxEntry("t", "a"), ledgertest.PushOutboxEntry("t", "a"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{
		ledgertest.PushConfigEntry("t", ledger.PushConfig{ID: "b", Deleted: true}),
		ledgertest.PushAttemptEntry("t", res.Entries[2].Seq, 1, true),
	}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Salvage(ctx, src, dst, nil); err != nil {
		t.Fatal(err)
	}
	out, err := ledger.Open(dst, ledger.Options{NoSync: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := out.PendingPush(ctx, 0)
	if err != nil || len(p) != 1 || p[0].Entry.ID != res.Entries[3].ID {
		t.Fatalf("pending after salvage = %+v, %v; want the second outbox entry only", p, err)
	}
	cs, _ := out.PushConfigs(ctx, "o", "t")
	if len(cs) != 1 || cs[0].ID != res.Entries[0].ID {
		t.Errorf("configs after salvage = %d, want config a only", len(cs))
	}
}

// TestUpgradeKeepsPushIndexes: a format-1 file's push configs and pending deliveries are
// there after the upgrade to format 2, read through the log (the index pointers are
// conversation key and seq, which the upgrade keeps).
func TestUpgradeKeepsPushIndexes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	var res ledger.AppendResult
	ledger.WriteFormat1(t, path, func(s *ledger.Store) {
		var err error
		res, err = s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{
			ledgertest.PushConfigEntry("t", ledger.PushConfig{ID: "a", URL: "https://a", Dialect: "1.0"}),
			ledgertest.PushOutboxEntry("t", "a"),
		}})
		if err != nil {
			t.Fatal(err)
		}
	})
	if _, err := ledger.Upgrade(ctx, path, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	out, err := ledger.Open(path, ledger.Options{NoSync: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := out.PendingPush(ctx, 0)
	if err != nil || len(p) != 1 || p[0].Entry.ID != res.Entries[1].ID {
		t.Fatalf("pending after the upgrade = %+v, %v; want the outbox entry", p, err)
	}
	cs, err := out.PushConfigs(ctx, "o", "t")
	if err != nil || len(cs) != 1 || cs[0].ID != res.Entries[0].ID {
		t.Errorf("configs after the upgrade = %d, %v; want config a", len(cs), err)
	}
}

// TestPushConfigsWithoutIndex: a Store whose config index was empty at Open answers
// PushConfigs without reading; a config appended later, on another task and on the
// asked one, is found at once and after a reopen; after Close it is ErrClosed.
func TestPushConfigsWithoutIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	open := func() *ledger.Store {
		s, err := ledger.Open(path, ledger.Options{NoSync: true}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	count := func(s *ledger.Store, task string) int {
		cs, err := s.PushConfigs(ctx, "o", task)
		if err != nil {
			t.Fatalf("PushConfigs(%q) error = %v", task, err)
		}
		return len(cs)
	}
	s := open()
	if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{
		{Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, TaskID: "t", Parts: []ledger.Part{{Kind: "text", Text: "hi"}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if n := count(s, "t"); n != 0 {
		t.Fatalf("configs of t before any = %d, want 0", n)
	}
	if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{
		ledgertest.PushConfigEntry("u", ledger.PushConfig{ID: "a", URL: "https://a", Dialect: "1.0"}),
	}}); err != nil {
		t.Fatal(err)
	}
	if n, m := count(s, "t"), count(s, "u"); n != 0 || m != 1 {
		t.Fatalf("configs of t, u after one set on u = %d, %d; want 0, 1", n, m)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PushConfigs(ctx, "o", "u"); !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("PushConfigs after Close error = %v, want ErrClosed", err)
	}
	s = open()
	defer s.Close()
	if n := count(s, "u"); n != 1 {
		t.Errorf("configs of u after reopen = %d, want 1", n)
	}
}
