package turn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/memory"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/a2a-gateway/gateway/prompt"
)

// memoryPolicy is the setting: a 2,000-token history budget, memory on.
func memoryPolicy() projection.Policy {
	return projection.Policy{HistoryLimit: 200, Operator: "Be brief.", Memory: true,
		Budget: projection.Budget{History: 2000}}
}

// longText is the user message of turn i: a sentence with a fact, then filler.
func longText(i int) string {
	return fmt.Sprintf("Turn %d: the release train for module m%d ships build %d on day %d. %s", i, i%7, 1000+i, i%30,
		strings.Repeat("Some filler words follow here. ", 4))
}

// TestMemoryLongConversation: a 300-turn conversation under a 2,000-token history
// budget (issue #38): every request fits its budget; once turns are dropped the agent is
// shown a memory section; snapshots are refreshed only when the drop boundary moves;
// every fact cites entries that exist inside its range and hold it; rebuilding each
// snapshot from the ledger gives the same snapshot; replay (from the ledger) equals live
// (through the Runner's history cache) at every turn.
func TestMemoryLongConversation(t *testing.T) {
	t.Parallel()
	const turns = 300
	ag := &recordingAgent{}
	r, st := newRunner(t, ag)
	r.cfg.Policy = memoryPolicy()
	for i := 1; i <= turns; i++ {
		if _, err := send(localCtx(t), r, "long", "", longText(i)); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	all, err := st.Range(t.Context(), "local", "long", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	look := memory.Lookups(all)
	var users []ledger.Entry
	snapshots := 0
	for i := range all {
		e := &all[i]
		switch {
		case e.Kind == ledger.KindUserMessage:
			users = append(users, *e)
		case e.Kind == ledger.KindMemorySnapshot:
			snapshots++
			checkSnapshot(t, r, st, e, look)
		case e.Kind == ledger.KindAudit && strings.Contains(string(e.Metadata), "MEMORY_"):
			t.Errorf("seq %d: unexpected memory audit %s", e.Seq, e.Metadata)
		}
	}
	if snapshots == 0 || snapshots > turns/4 {
		t.Fatalf("%d snapshots over %d turns, want some, refreshed only when the boundary moves (≤ %d)", snapshots, turns, turns/4)
	}
	shown := 0
	for i, u := range users {
		rt, err := prompt.Replay(t.Context(), st, r.cfg.Policy, "local", "long", u.Seq)
		if err != nil {
			t.Fatalf("Replay(turn %d) error = %v", i+1, err)
		}
		// Live turns read their history through the Runner's prompt.Cache; Replay reads
		// the ledger: the two must agree byte for byte.
		if diff := cmp.Diff(ag.turns[i].Request, rt.Request); diff != "" {
			t.Fatalf("turn %d: replay differs from live (-live +replay):\n%s", i+1, diff)
		}
		if ag.turns[i].Prompt != rt.Prompt {
			t.Fatalf("turn %d: replayed text prompt differs from live:\n%s\n---\n%s", i+1, ag.turns[i].Prompt, rt.Prompt)
		}
		if rt.Stats.HistoryTokens > 2000 {
			t.Errorf("turn %d: history %d tokens, over the 2,000 budget", i+1, rt.Stats.HistoryTokens)
		}
		if rt.Stats.MemoryFacts > 0 {
			shown++
			if !strings.Contains(ag.turns[i].Prompt, "[Memory of the earlier conversation") {
				t.Errorf("turn %d: memory counted but not in the prompt", i+1)
			}
		} else if rt.Stats.OmittedBefore > 1 {
			t.Errorf("turn %d: entries before #%d dropped without memory", i+1, rt.Stats.OmittedBefore)
		}
	}
	if shown < turns/2 {
		t.Errorf("memory shown at %d of %d turns, want most", shown, turns)
	}
	reused, recorded := prefixFigures(t, all)
	if recorded != turns-1 || reused*10 < recorded*9 {
		t.Errorf("%d of %d turns reuse ≥ 90%% of the previous request (recorded at %d), want ≥ 90%%", reused, turns-1, recorded)
	}
	t.Logf("%d turns, %d snapshots, memory shown at %d turns; %d of %d turns reuse ≥ 90%% of the previous request", turns, snapshots, shown, reused, recorded)
}

// prefixFigures reads the prompt figures of the final STATUS entries: how many turns
// reuse at least 90% of the previous request as their prefix, of how many that had one.
func prefixFigures(t *testing.T, all []ledger.Entry) (reused, recorded int) {
	t.Helper()
	for i := range all {
		e := &all[i]
		if e.Kind != ledger.KindStatus || len(e.Metadata) == 0 {
			continue
		}
		p, _ := prompt.FiguresOf(e)
		if p == nil {
			t.Fatalf("seq %d: status metadata %s without figures", e.Seq, e.Metadata)
		}
		if p.PrevRequestBytes == 0 {
			continue
		}
		recorded++
		if p.ReuseBytes*10 >= p.PrevRequestBytes*9 {
			reused++
		}
		if p.ReuseTokens != (p.ReuseBytes+3)/4 || p.RequestBytes == 0 {
			t.Errorf("seq %d: figures %+v", e.Seq, *p)
		}
	}
	return reused, recorded
}

// checkSnapshot checks one stored snapshot: its evidence holds (memory.Verify against
// the ledger), it covers entries before it only, and the rebuild equals it.
func checkSnapshot(t *testing.T, r *Runner, st *ledger.Store, e *ledger.Entry, look memory.Lookup) {
	t.Helper()
	snap, err := ledger.MemoryRecord(e)
	if err != nil {
		t.Fatalf("seq %d: %v", e.Seq, err)
	}
	if snap.Last >= e.Seq || len(snap.Facts) == 0 {
		t.Errorf("seq %d: snapshot of #%d..#%d with %d facts", e.Seq, snap.First, snap.Last, len(snap.Facts))
	}
	if rej := memory.Verify(snap, look); len(rej) != 0 {
		t.Errorf("seq %d: facts that fail the evidence check: %v", e.Seq, rej)
	}
	rebuilt, _, _, err := prompt.Extractive(t.Context(), st, r.cfg.Policy, "local", "long", snap.Last)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(snap, rebuilt); diff != "" {
		t.Errorf("seq %d: rebuilt snapshot differs (-stored +rebuilt):\n%s", e.Seq, diff)
	}
}
