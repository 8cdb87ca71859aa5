package ledger

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testOpts is the default for tests: no fsync (tests that need durability say so).
var testOpts = Options{NoSync: true}

// mustOpen opens a Store on a fresh file in t.TempDir() and closes it in t.Cleanup.
func mustOpen(tb testing.TB, opts Options) *Store {
	tb.Helper()
	return mustOpenPath(tb, filepath.Join(tb.TempDir(), "data", "ledger.db"), opts)
}

func mustOpenPath(tb testing.TB, path string, opts Options) *Store {
	tb.Helper()
	s, err := Open(path, opts, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatalf("Open(%q) error = %v, want nil", path, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close() error = %v, want nil", err)
		}
	})
	return s
}

// modes runs f once per commit mode.
func modes(t *testing.T, f func(t *testing.T, opts Options)) {
	t.Helper()
	for _, m := range []struct {
		name string
		opts Options
	}{
		{"group", Options{NoSync: true}},
		{"plain", Options{NoSync: true, NoGroupCommit: true}},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, m.opts)
		})
	}
}

// fakeClock returns a Now func that advances one second per call from a fixed start.
func fakeClock() func() time.Time {
	var n atomic.Int64
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return func() time.Time { return start.Add(time.Duration(n.Add(1)) * time.Second) }
}

func textEntry(kind Kind, text string) Entry {
	role := RoleUser
	trust := TrustPeerUntrusted
	if kind != KindUserMessage {
		role, trust = RoleAgent, TrustAgent
	}
	return Entry{
		Kind:       kind,
		Trust:      trust,
		Visibility: VisibilityModel,
		Role:       role,
		Parts:      []Part{{Kind: PartText, Text: text}},
	}
}

func userMsg(text string) Entry  { return textEntry(KindUserMessage, text) }
func agentMsg(text string) Entry { return textEntry(KindAgentReply, text) }

// mustAppend appends entries to (owner, contextID) and fails the test on error.
func mustAppend(tb testing.TB, s *Store, owner, contextID string, entries ...Entry) AppendResult {
	tb.Helper()
	res, err := s.Append(context.Background(), AppendRequest{Owner: owner, ContextID: contextID, Entries: entries})
	if err != nil {
		tb.Fatalf("Append(%q, %q) error = %v, want nil", owner, contextID, err)
	}
	return res
}

// texts returns the first part's text of each entry.
func texts(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		if len(e.Parts) > 0 {
			out[i] = e.Parts[0].Text
		}
	}
	return out
}

func seqs(entries []Entry) []uint64 {
	out := make([]uint64, len(entries))
	for i, e := range entries {
		out[i] = e.Seq
	}
	return out
}

func numbered(prefix string, n int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		out[i] = userMsg(fmt.Sprintf("%s-%d", prefix, i+1))
	}
	return out
}
