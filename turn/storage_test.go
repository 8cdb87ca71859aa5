package turn

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// TestStorageFullRefusesTheTurn: when the ledger's storage refuses the commit of the
// inbound message, the send fails with STORAGE_UNAVAILABLE naming the cause, the agent is
// not called and nothing is stored; once the storage takes writes, the same send runs.
func TestStorageFullRefusesTheTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		send func(ctx context.Context, r *Runner, p *a2a.SendParams) error
	}{
		{"SendMessage", func(ctx context.Context, r *Runner, p *a2a.SendParams) error {
			_, err := r.SendMessage(ctx, p)
			return err
		}},
		{"SendStreamingMessage", func(ctx context.Context, r *Runner, p *a2a.SendParams) error {
			st, err := r.SendStreamingMessage(ctx, p)
			if err == nil {
				for {
					if _, err := st.Next(ctx); err != nil {
						break
					}
				}
				st.Close()
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, full := openFullableLedger(t)
			var turns atomic.Int64
			ag := funcAgent(func(_ context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
				turns.Add(1)
				return agent.Result{}, emit("ok")
			})
			r := New(Config{}, st, locking.NewLocal(), ag, slog.New(slog.DiscardHandler))
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = r.Close(ctx)
				_ = st.Close()
			})
			p := &a2a.SendParams{Message: a2a.Message{MessageID: "m1", ContextID: "c", Role: a2a.RoleUser,
				Parts: []a2a.Part{a2a.TextPart("hello")}}}

			full.Store(true)
			err := tc.send(localCtx(t), r, p)
			if !errors.Is(err, a2a.ErrStorageUnavailable) {
				t.Fatalf("send while full error = %v, want ErrStorageUnavailable", err)
			}
			want := wireError{Code: -32000, Message: "the gateway's storage is full; nothing of this request was stored; retry later",
				Metadata: map[string]string{"cause": "full"}}
			if diff := cmp.Diff(want, wireOf(err)); diff != "" {
				t.Errorf("send while full on the wire (-want +got):\n%s", diff)
			}
			if n := countEntries(t, st, "local", "c"); n != 0 || turns.Load() != 0 {
				t.Errorf("after the refused send: %d entries stored, %d agent turns; want 0, 0", n, turns.Load())
			}

			full.Store(false)
			if err := tc.send(localCtx(t), r, p); err != nil {
				t.Fatalf("send once the storage takes writes error = %v", err)
			}
		})
	}
}

// openFullableLedger opens a ledger in a temp dir whose storage reports ENOSPC for every
// write while full is set (through ledger.Options.WriteFault). The caller closes it.
func openFullableLedger(t *testing.T) (*ledger.Store, *atomic.Bool) {
	t.Helper()
	full := new(atomic.Bool)
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := ledger.Open(path, ledger.Options{NoSync: true, WriteFault: func(string) error {
		if full.Load() {
			return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
		}
		return nil
	}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return st, full
}
