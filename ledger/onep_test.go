package ledger

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestGroupCommit_OneP checks that group commit still groups with one P (GOMAXPROCS=1,
// as in a one-CPU container): 64 writers that append again as soon as their previous
// append returns must share commits, at least 8 appends per commit on average. Before
// the committer yielded between drains, an answered writer's next append woke the
// committer at once (runnext) and this test measured 1.0 to 1.1 appends per commit
// (61 to 64 after); the gateway under `gateway bench --concurrency 64` at GOMAXPROCS=1
// did 3.3 (issue #16 item 3).
//
// Not parallel: it changes GOMAXPROCS for the whole test binary while it runs.
func TestGroupCommit_OneP(t *testing.T) {
	const writers, perWriter, wantPerCommit = 64, 20, 8.0
	// No fsync: the batching must come from the scheduling alone, not from sysmon handing
	// the P on while the committer is in a slow fdatasync (which it does on a slow disk).
	s := mustOpen(t, testOpts)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := t.Context()
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: fmt.Sprintf("p-%d", w),
					Entries: []Entry{userMsg(fmt.Sprintf("p%d-%d", w, i))}}); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Append() errors: %v", err)
	}
	st := s.Stats()
	t.Logf("GOMAXPROCS=1: %d appends in %d commits (%.1f per commit)", st.Appends, st.Commits, st.AppendsPerCommit())
	if st.Appends != writers*perWriter || st.AppendsPerCommit() < wantPerCommit {
		t.Errorf("Stats() = %d appends, %.1f per commit; want %d appends, at least %.0f per commit", st.Appends, st.AppendsPerCommit(), writers*perWriter, wantPerCommit)
	}
}
