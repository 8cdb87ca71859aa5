package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/ledgertest"
)

// TestPushIndexesAcrossInstances: two instances append outbox entries and configs to
// the same new conversations at once (their commits conflict, so some go the one-by-one
// path, apply.go, and the others the pipelined one, batch.go): every acknowledged
// outbox entry is pending exactly once, and both instances read the same configs.
func TestPushIndexesAcrossInstances(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a, b := openURL(t, url), openURL(t, url)
	ctx := context.Background()
	const convs, each = 16, 2
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids = map[string]bool{}
	)
	start := make(chan struct{})
	for i := range convs * each {
		s := a
		if i/convs == 1 {
			s = b
		}
		wg.Go(func() {
			<-start // both instances create each conversation at once
			task := fmt.Sprintf("t%d", i%convs)
			res, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: fmt.Sprintf("c%d", i%convs), Entries: []ledger.Entry{
				ledgertest.PushConfigEntry(task, ledger.PushConfig{ID: fmt.Sprintf("cfg%d", i), URL: "https://h", Dialect: "1.0"}),
				ledgertest.PushOutboxEntry(task, "cfg"),
			}})
			if err != nil {
				t.Errorf("append %d: %v", i, err)
				return
			}
			mu.Lock()
			ids[res.Entries[1].ID] = true
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	for _, s := range []ledgertest.PushStore{a, b} {
		p, err := s.PendingPush(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, it := range p {
			if !ids[it.Entry.ID] || seen[it.Entry.ID] {
				t.Errorf("pending %s: not an acknowledged outbox entry, or listed twice", it.Entry.ID)
			}
			seen[it.Entry.ID] = true
		}
		if len(seen) != len(ids) {
			t.Errorf("pending = %d, want %d", len(seen), len(ids))
		}
		if n, _ := s.PushConfigCount(ctx, "o"); n != convs*each {
			t.Errorf("configs = %d, want %d", n, convs*each)
		}
	}
}
