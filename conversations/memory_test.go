package conversations

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/a2a-gateway/gateway/prompt"
)

// TestRebuildMemory: the extractive snapshot stored for a range rebuilds equal; a
// snapshot whose fact its evidence does not hold is reported (and, with write, the
// rebuilt one appended); Show resolves each fact's evidence.
func TestRebuildMemory(t *testing.T) {
	t.Parallel()
	led, _ := openLedger(t)
	policy := projection.Policy{HistoryLimit: 20, Memory: true, Budget: projection.Budget{History: 2000}}
	svc := New(led, Config{Policy: policy})
	for i := range 12 {
		turn(t, led, "p", "mem", fmt.Sprintf("step %d of the migration uses tool t%d.", i, i))
	}
	snap, _, _, err := prompt.Extractive(t.Context(), led, policy, "p", "mem", 16)
	if err != nil || len(snap.Facts) == 0 {
		t.Fatalf("Extractive() = %d facts, %v", len(snap.Facts), err)
	}
	store := func(s ledger.MemorySnapshot) {
		b, _ := json.Marshal(s)
		if _, err := led.Append(t.Context(), ledger.AppendRequest{Owner: "p", ContextID: "mem", Entries: []ledger.Entry{{
			Kind: ledger.KindMemorySnapshot, Trust: ledger.TrustModel, Visibility: ledger.VisibilityModel, Actor: "gateway", Metadata: b}}}); err != nil {
			t.Fatal(err)
		}
	}
	store(snap)
	rep, err := svc.RebuildMemory(t.Context(), Ref{ContextID: "mem"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Snapshots) != 1 || !rep.Snapshots[0].Equal || len(rep.Snapshots[0].Problems) != 0 || rep.Written != 0 {
		t.Fatalf("RebuildMemory() = %+v, want one equal snapshot, nothing written", rep)
	}
	bad := snap
	bad.Facts = append([]ledger.MemoryFact(nil), snap.Facts...)
	bad.Facts[0].Text = "step 99 uses tool t99"
	store(bad)
	rep, err = svc.RebuildMemory(t.Context(), Ref{ContextID: "mem"}, true)
	if err != nil {
		t.Fatal(err)
	}
	last := rep.Snapshots[len(rep.Snapshots)-1]
	if last.Equal || len(last.Problems) != 1 || rep.Written == 0 {
		t.Fatalf("tampered snapshot: %+v, written %d; want a problem and the rebuilt one written", last, rep.Written)
	}
	res, err := svc.Show(t.Context(), Ref{ContextID: "mem"}, ShowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Memory == nil || res.Memory.Seq != rep.Written || len(res.Memory.Problems) != 0 {
		t.Fatalf("Show().Memory = %+v, want the rebuilt snapshot at %d", res.Memory, rep.Written)
	}
	for _, f := range res.Memory.Facts {
		ev := f.Evidence[0]
		if !ev.Found || !strings.Contains(ev.Excerpt, strings.TrimSuffix(f.Text, ".")) {
			t.Errorf("fact %q: evidence %+v does not resolve to its entry", f.Text, ev)
		}
	}
}
