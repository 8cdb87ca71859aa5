package ledger

import (
	"testing"
)

// The entries of a conversation's next append are encoded and hashed before the commit,
// from the head the last commit left; the committer uses them when the head has not
// moved, and computes them itself when it has. Either way the chain is the same.
func TestPrecomputedEntries(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := mustOpen(t, Options{NoSync: true})

	mustAppend(t, s, "local", "c", userMsg("one")) // no head cached yet: computed in the commit
	if h, m := s.guessHits.Load(), s.guessMisses.Load(); h != 0 || m != 0 {
		t.Fatalf("after the first append: %d hits, %d misses; want none", h, m)
	}
	res := mustAppend(t, s, "local", "c", agentMsg("two"), userMsg("three"))
	if h := s.guessHits.Load(); h != 1 {
		t.Fatalf("second append: %d precomputed hits, want 1", h)
	}
	if e := res.Entries[1]; e.Seq != 3 || e.PrevHash != res.Entries[0].Hash {
		t.Errorf("second append stored seq %d prevHash %q, want 3 and %q", e.Seq, e.PrevHash, res.Entries[0].Hash)
	}

	// A request prepared against head 3, then another append moves the head to 4 before
	// the first one commits: the committer must not use the stale precomputation.
	stale, err := s.prepare(&AppendRequest{Owner: "local", ContextID: "c", Entries: []Entry{agentMsg("late")}})
	if err != nil {
		t.Fatal(err)
	}
	if stale.guess == nil || stale.guess.baseSeq != 3 {
		t.Fatalf("prepare() guess = %+v, want one based on seq 3", stale.guess)
	}
	mustAppend(t, s, "local", "c", userMsg("four"))
	if !s.enter() {
		t.Fatal("store closed")
	}
	w := &pending{req: stale, done: make(chan outcome, 1)}
	s.queue <- w
	s.inflight.Done()
	out := <-w.done
	if out.err != nil {
		t.Fatal(out.err)
	}
	if got := out.entries[0]; got.Seq != 5 {
		t.Errorf("stale request stored at seq %d, want 5", got.Seq)
	}
	if m := s.guessMisses.Load(); m != 1 {
		t.Errorf("%d misses, want 1 (the stale request)", m)
	}
	if err := s.Verify(ctx, "local", "c"); err != nil {
		t.Errorf("Verify() = %v", err)
	}
	all, err := s.Range(ctx, "local", "c", 0, 0)
	if err != nil || len(all) != 5 {
		t.Fatalf("Range() = %d entries, %v; want 5", len(all), err)
	}
	if all[4].Parts[0].Text != "late" || all[4].PrevHash != all[3].Hash {
		t.Errorf("entry 5 = %q prevHash %q, want \"late\" chained to %q", all[4].Parts[0].Text, all[4].PrevHash, all[3].Hash)
	}

	// A turn's epoch: BeginTurn bumps it in the guess as the committer does.
	r1, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "c", BeginTurn: true, Entries: []Entry{userMsg("turn")}})
	if err != nil {
		t.Fatal(err)
	}
	hits := s.guessHits.Load()
	if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "c", Epoch: r1.Epoch, Entries: []Entry{agentMsg("reply")}}); err != nil {
		t.Fatal(err)
	}
	if s.guessHits.Load() != hits+1 {
		t.Errorf("fenced append of the turn was not precomputed")
	}
	if err := s.Verify(ctx, "local", "c"); err != nil {
		t.Errorf("Verify() = %v", err)
	}
}
