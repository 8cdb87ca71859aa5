package projection

import (
	"fmt"
	"strings"
	"testing"
)

// turnStarts returns the index in items of every turn's user message.
func turnStarts(items []Item) []int {
	var starts []int
	for i := range items {
		if items[i].Kind == KindUserMessage {
			starts = append(starts, i)
		}
	}
	return starts
}

// replay builds the request of every turn of items as the gateway would (history: all
// items before the turn's user message; current: that message) and returns the OpenAI
// bodies and Stats, turn by turn.
func replay(t *testing.T, items []Item, p Policy) ([]string, []Stats) {
	t.Helper()
	var bodies []string
	var stats []Stats
	for _, at := range turnStarts(items) {
		req, st := mustBuild(t, items[:at], items[at], p)
		body, err := req.OpenAI("gpt-test", true)
		if err != nil {
			t.Fatalf("turn at item %d: OpenAI() error = %v", at, err)
		}
		if h := p.Budget.History; st.HistoryTokens > h {
			t.Fatalf("turn at item %d: history %d tokens, budget %d", at, st.HistoryTokens, h)
		}
		bodies = append(bodies, string(body))
		stats = append(stats, st)
	}
	return bodies, stats
}

// TestCacheStability: a 50-turn conversation with large tool results, projected turn by
// turn. Once compaction has started, every request's OpenAI body repeats at least 90%
// of the previous body as its prefix (P-3: in-place replacement keeps the prefix
// byte-stable, so prompt caches keep hitting).
func TestCacheStability(t *testing.T) {
	t.Parallel()
	items := conversation(50, convOptions{resultBytes: 12_000, statuses: true, userBytes: 200, replyBytes: 400})
	p := Policy{HistoryLimit: 200, MaxMessageBytes: 8000, Peer: "peer-a", Operator: "Be concise.",
		Budget: Budget{History: 12_000}}
	bodies, stats := replay(t, items, p)

	started := -1 // the turn where compaction switched on
	minFrac, minTurn := 2.0, -1
	var log strings.Builder
	for i := 1; i < len(bodies); i++ {
		frac := float64(commonPrefix(bodies[i-1], bodies[i])) / float64(len(bodies[i-1]))
		st := stats[i]
		mark := ""
		if st.Compacting && started < 0 {
			started, mark = i, " <- compaction starts"
		}
		fmt.Fprintf(&log, "turn %2d: body %7d bytes, history %5d tokens, replaced %2d, prefix kept %.4f%s\n",
			i+1, len(bodies[i]), st.HistoryTokens, st.Replaced, frac, mark)
		if st.OmittedBefore != 0 {
			t.Fatalf("turn %d dropped messages; the scenario is meant to stay within the budget by compaction alone", i+1)
		}
		if started >= 0 && i > started && frac < minFrac {
			minFrac, minTurn = frac, i+1
		}
	}
	t.Logf("per-turn prefix fractions (longest common prefix / previous body):\n%s", log.String())
	if started < 0 || started > 20 {
		t.Fatalf("compaction started at turn index %d, want it to start within the first 20 turns", started)
	}
	t.Logf("compaction started at turn %d; minimum prefix fraction after that: %.4f (turn %d)", started+1, minFrac, minTurn)
	if minFrac < 0.9 {
		t.Errorf("minimum prefix fraction after compaction started = %.4f at turn %d, want >= 0.9", minFrac, minTurn)
	}
	// Once replaced, a message stays replaced identically: every later request has the
	// same tool-result placeholders at the same places.
	last := bodies[len(bodies)-1]
	for i := started + 1; i < len(bodies); i++ {
		prev := bodies[i-1]
		cut := strings.LastIndex(prev, `,{"role":"user"`) // the previous current message
		if !strings.HasPrefix(last, prev[:cut]) {
			t.Errorf("turn %d: the history of the previous request is not a prefix of the last request", i+1)
			break
		}
	}
}

// TestDropStability: over a long conversation with a small budget, old turns are dropped
// in blocks: the drop marker (and with it the start of the history) changes rarely, the
// budget always holds, and between two changes the prefix stays stable.
func TestDropStability(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		turns      int
		opts       convOptions
		policy     Policy
		maxChanges int // at most this many changes of the marker
	}{
		{
			name:       "budget bound",
			turns:      300,
			opts:       convOptions{resultBytes: 5000, statuses: true, userBytes: 200, replyBytes: 400},
			policy:     Policy{HistoryLimit: 200, Budget: Budget{History: 8192}},
			maxChanges: 300 / 12,
		},
		{
			name:       "limit bound",
			turns:      300,
			opts:       convOptions{statuses: true},
			policy:     Policy{HistoryLimit: 40, Budget: Budget{History: 1 << 20}},
			maxChanges: 300 / 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			items := conversation(tt.turns, tt.opts)
			bodies, stats := replay(t, items, tt.policy)
			changes, dropped := 0, false
			minFrac := 2.0
			for i := 1; i < len(bodies); i++ {
				if stats[i].OmittedBefore == 0 {
					continue
				}
				if stats[i].OmittedBefore != stats[i-1].OmittedBefore {
					changes++
					continue
				}
				dropped = true
				frac := float64(commonPrefix(bodies[i-1], bodies[i])) / float64(len(bodies[i-1]))
				minFrac = min(minFrac, frac)
			}
			if !dropped {
				t.Fatalf("no drops happened; the scenario is meant to drop")
			}
			t.Logf("%d turns: the drop marker changed %d times; minimum prefix fraction between changes %.4f", tt.turns, changes, minFrac)
			if changes > tt.maxChanges {
				t.Errorf("the drop marker changed %d times in %d turns, want at most %d", changes, tt.turns, tt.maxChanges)
			}
			if minFrac < 0.9 {
				t.Errorf("minimum prefix fraction between marker changes = %.4f, want >= 0.9", minFrac)
			}
		})
	}
}
