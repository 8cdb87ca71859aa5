package turn

import (
	"context"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// appendRunning stores a task of contextID that is still working (its turn running, or
// its instance stopped mid-turn).
func appendRunning(t *testing.T, st Ledger, contextID, taskID string) {
	t.Helper()
	_, err := st.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: contextID, BeginTurn: true, Entries: []ledger.Entry{
		{TaskID: taskID, Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser, MessageID: "m-" + taskID, Parts: []ledger.Part{{Kind: ledger.PartText, Text: "hi"}}},
		{TaskID: taskID, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: "working"},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// failedCount counts taskID's failed statuses.
func failedCount(t *testing.T, st Ledger, taskID string) int {
	t.Helper()
	_, es, err := st.TaskEntries(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Kind == ledger.KindStatus && e.State == "failed" {
			n++
		}
	}
	return n
}

// TestRecoverSharedStoreLeavesHeldLease: with a shared store, Recover leaves alone a
// running task whose context lease is held (another instance runs the turn), and the
// Runner's sweep marks it failed, once, after the lease is given up (its instance
// stopped and the lease expired). Without a shared store, Recover marks it at once.
func TestRecoverSharedStoreLeavesHeldLease(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		shared     bool
		wantAtOnce int
	}{
		{"shared store: held lease left alone", true, 0},
		{"own store: marked at once", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			locks := locking.NewLocal()
			r, st := newRunnerWith(t, Config{SharedStore: tt.shared, LeaseTTL: 20 * time.Millisecond}, locks, agent.Echo{})
			// The lease first, as the instance running the turn holds it before its task
			// is stored: the other way round, the Runner's sweep (every LeaseTTL) could
			// find the task running with its lease free and take the lease to recover it
			// before this test took it (it did, once, under make test-load).
			lease, err := locks.Acquire(t.Context(), contextid.Key("local", "elsewhere"), "t-elsewhere")
			if err != nil {
				t.Fatal(err)
			}
			appendRunning(t, st, "elsewhere", "t-elsewhere")
			n, err := r.Recover(t.Context())
			if err != nil || n != tt.wantAtOnce || failedCount(t, st, "t-elsewhere") != tt.wantAtOnce {
				t.Fatalf("Recover() = %d, %v; %d failed statuses; want %d", n, err, failedCount(t, st, "t-elsewhere"), tt.wantAtOnce)
			}
			if !tt.shared {
				return
			}
			if err := lease.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			testutil.WaitFor(t, "the sweep to mark the task failed", func() bool { return failedCount(t, st, "t-elsewhere") > 0 })
			if n, err := r.Recover(t.Context()); err != nil || n != 0 || failedCount(t, st, "t-elsewhere") != 1 {
				t.Fatalf("Recover() after the sweep = %d, %v; %d failed statuses; want 0 and exactly one", n, err, failedCount(t, st, "t-elsewhere"))
			}
		})
	}
}
