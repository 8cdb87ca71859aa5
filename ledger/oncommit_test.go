package ledger

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// commitLog records OnCommit calls.
type commitLog struct {
	mu      sync.Mutex
	appends []int
	total   time.Duration
}

func (l *commitLog) hook(d time.Duration, appends int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.appends = append(l.appends, appends)
	l.total += d
}

func (l *commitLog) get() ([]int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.appends...), l.total
}

// TestOnCommit: the hook sees every committed transaction, with its entry count and the
// time Stats counts, before Append returns; refused requests call it not at all.
func TestOnCommit(t *testing.T) {
	modes(t, func(t *testing.T, opts Options) {
		var log commitLog
		opts.OnCommit = log.hook
		s := mustOpen(t, opts)
		mustAppend(t, s, "local", "a", userMsg("one"))
		mustAppend(t, s, "local", "a", userMsg("two"), agentMsg("three"), agentMsg("four"))
		if _, err := s.Append(t.Context(), AppendRequest{Owner: "local", ContextID: "b", Epoch: 9, Entries: []Entry{userMsg("fenced")}}); !errors.Is(err, ErrFenced) {
			t.Fatalf("Append(stale epoch) error = %v, want %v", err, ErrFenced)
		}
		got, total := log.get()
		if diff := cmp.Diff([]int{1, 3}, got); diff != "" {
			t.Errorf("OnCommit appends (-want +got):\n%s", diff)
		}
		st := s.Stats()
		if total != st.CommitTime || total <= 0 {
			t.Errorf("OnCommit durations sum to %v, want Stats().CommitTime = %v (> 0)", total, st.CommitTime)
		}
	})
}

// TestOnCommit_GroupBatch: one group commit with refused requests reports only the
// entries it committed.
func TestOnCommit_GroupBatch(t *testing.T) {
	t.Parallel()
	var log commitLog
	opts := testOpts
	opts.OnCommit = log.hook
	s := mustOpen(t, opts)
	reqs := []AppendRequest{
		{Owner: "local", ContextID: "a", Entries: []Entry{userMsg("a1"), agentMsg("a2")}},
		{Owner: "local", ContextID: "b", Epoch: 7, Entries: []Entry{userMsg("fenced")}},
		{Owner: "local", ContextID: "c", Entries: []Entry{userMsg("c1")}},
	}
	batch := make([]*pending, len(reqs))
	for i := range reqs {
		p, err := s.prepare(&reqs[i])
		if err != nil {
			t.Fatalf("prepare(%d) error = %v", i, err)
		}
		batch[i] = &pending{req: p, done: make(chan outcome, 1)}
	}
	s.commitBatch(batch)
	for _, p := range batch {
		<-p.done
	}
	// A batch in which every request is refused commits nothing and reports nothing.
	p, err := s.prepare(&AppendRequest{Owner: "local", ContextID: "b", Epoch: 7, Entries: []Entry{userMsg("fenced")}})
	if err != nil {
		t.Fatal(err)
	}
	refused := []*pending{{req: p, done: make(chan outcome, 1)}}
	s.commitBatch(refused)
	<-refused[0].done
	got, _ := log.get()
	if diff := cmp.Diff([]int{3}, got); diff != "" {
		t.Errorf("OnCommit appends (-want +got):\n%s", diff)
	}
}
