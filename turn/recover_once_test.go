package turn

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// barrierList is a Ledger whose List waits until every Recover has listed, so that the
// instances read the same heads before any of them appends (instances restarting
// together on one shared store).
type barrierList struct {
	Ledger
	listed *sync.WaitGroup
}

func (b barrierList) List(ctx context.Context, opts ledger.ListOptions) ([]ledger.Conversation, error) {
	out, err := b.Ledger.List(ctx, opts)
	b.listed.Done()
	b.listed.Wait()
	return out, err
}

// TestRecoverOnceAcrossInstances: two runners (two gateway instances) recovering one
// shared ledger at the same time mark the interrupted task failed exactly once.
func TestRecoverOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	_, st := newRunner(t, agent.Echo{})
	_, err := st.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "crashed", BeginTurn: true, Entries: []ledger.Entry{
		{TaskID: "t-crash", Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser, MessageID: "m", Parts: []ledger.Part{{Kind: ledger.PartText, Text: "hi"}}},
		{TaskID: "t-crash", Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: "working"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var listed sync.WaitGroup
	listed.Add(2)
	counts := make([]int, 2)
	var wg sync.WaitGroup
	for i := range counts {
		r := New(Config{}, barrierList{st, &listed}, locking.NewLocal(), agent.Echo{}, slog.New(slog.DiscardHandler))
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		wg.Go(func() {
			n, err := r.Recover(t.Context())
			if err != nil {
				t.Errorf("Recover() error = %v", err)
			}
			counts[i] = n
		})
	}
	wg.Wait()
	_, es, err := st.TaskEntries(t.Context(), "t-crash")
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, e := range es {
		if e.State == "failed" {
			failed++
		}
	}
	if counts[0]+counts[1] != 1 || failed != 1 {
		t.Fatalf("Recover() counts %v, %d failed statuses; want the task recovered exactly once", counts, failed)
	}
}
