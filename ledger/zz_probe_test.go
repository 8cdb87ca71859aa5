package ledger

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"
)

func TestZZOneWriter(t *testing.T) {
	plain := mustOpen(t, Options{NoGroupCommit: true, NoSync: os.Getenv("NS") != ""})
	group := mustOpen(t, Options{NoSync: os.Getenv("NS") != ""})
	var lp, lg []time.Duration
	ctx := context.Background()
	for i := range 3000 {
		for j, s := range []*Store{plain, group} {
			if i%2 == 1 {
				s = []*Store{group, plain}[j]
			}
			t0 := time.Now()
			if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "c", Entries: []Entry{userMsg(benchText)}}); err != nil {
				t.Fatal(err)
			}
			d := time.Since(t0)
			if s == plain {
				lp = append(lp, d)
			} else {
				lg = append(lg, d)
			}
		}
	}
	slices.Sort(lp)
	slices.Sort(lg)
	t.Logf("plain p50 %v p90 %v; group p50 %v p90 %v; ratio %.3f", percentile(lp, .5), percentile(lp, .9), percentile(lg, .5), percentile(lg, .9), float64(percentile(lg, .5))/float64(percentile(lp, .5)))
}
