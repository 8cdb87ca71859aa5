package prompt

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
)

// convWriter appends the turns of one conversation the way the turn runner does (a user
// message, a working status, the snapshot when one is made, tool traffic, an audit, a
// reply, a final status), with varied sizes, and checks each turn's preparation through
// a Cache against PlanTurn's from the ledger.
type convWriter struct {
	led       *ledger.Store
	policy    projection.Policy
	owner, id string
	rng       *rand.Rand
	turns     int
	filler    func(turn int) int // sentences of filler of each user message; nil: random
	// alter, if set, changes the snapshot entries a turn stores (another summariser's).
	alter func(extra []ledger.Entry) []ledger.Entry
}

// message is a user message of random length: mostly short, sometimes long enough to be
// cut by compaction, now and then longer than the ledger's large-part threshold (an
// artifact the history inflates).
func (c *convWriter) message() string {
	if c.filler != nil {
		return simText(c.turns, c.filler(c.turns))
	}
	n := c.rng.IntN(12)
	switch c.rng.IntN(20) {
	case 0:
		n = 60 + c.rng.IntN(60) // 3.5-7 KB
	case 1:
		n = 20 + c.rng.IntN(10) // over the compaction cut
	}
	return simText(c.turns, n)
}

// input prepares the turn of user with planner: the plan, the stored snapshot for its
// boundary or a new extractive one (returned to be stored), rendered.
func (c *convWriter) input(t *testing.T, pl *Plan, err error) (Input, []ledger.Entry) {
	t.Helper()
	if err != nil {
		t.Fatalf("turn %d: plan: %v", c.turns, err)
	}
	b := pl.Boundary()
	if !c.policy.Memory || b < 2 {
		return pl.Input(nil), nil
	}
	if snap, seq, ok := pl.Stored(); ok {
		in := pl.Input(&snap)
		in.MemorySeq = seq
		return in, nil
	}
	snap, _, _, err := pl.Extractive(t.Context(), c.led, c.policy, c.owner, c.id, b-1)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(snap)
	return pl.Input(&snap), []ledger.Entry{{Kind: ledger.KindMemorySnapshot, Trust: ledger.TrustModel,
		Visibility: ledger.VisibilityModel, Actor: "gateway", Metadata: meta}}
}

// turn runs one turn: prepared through cache (nil: PlanTurn only), checked against
// PlanTurn's preparation, then appended.
func (c *convWriter) turn(t *testing.T, cache *Cache) {
	t.Helper()
	ctx := t.Context()
	c.turns++
	user := entry(ledger.KindUserMessage, c.message())
	p, err := PlanTurn(ctx, c.led, c.policy, c.owner, c.id, 0, user)
	want, extra := c.input(t, p, err)
	if cache != nil {
		p, err := cache.PlanTurn(ctx, c.led, c.policy, c.owner, c.id, user)
		got, gotExtra := c.input(t, p, err)
		c.same(t, want, got)
		if diff := cmp.Diff(extra, gotExtra); diff != "" {
			t.Fatalf("%s turn %d: cached snapshot differs (-uncached +cached):\n%s", c.id, c.turns, diff)
		}
	}
	if c.alter != nil {
		extra = c.alter(extra)
	}
	c.append(t, user, extra)
}

// same fails unless got equals want, and their mapped bodies are byte-identical.
func (c *convWriter) same(t *testing.T, want, got Input) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s turn %d: cached input differs (-uncached +cached):\n%s", c.id, c.turns, diff)
	}
	for _, body := range []func(Input) ([]byte, error){
		func(in Input) ([]byte, error) { return in.Request.OpenAI("m", true) },
		func(in Input) ([]byte, error) { return in.Request.Anthropic("m", 1024, true) },
	} {
		w, werr := body(want)
		g, gerr := body(got)
		if string(w) != string(g) || (werr == nil) != (gerr == nil) {
			t.Fatalf("%s turn %d: cached body differs:\n%s\n%s", c.id, c.turns, w, g)
		}
	}
}

// append stores the turn: user message, working status, extra (the snapshot), and at
// random tool traffic (a large result now and then), an audit-only record and a reply
// with a relay's upstream ids or marked partial, then the final status.
func (c *convWriter) append(t *testing.T, user ledger.Entry, extra []ledger.Entry) {
	t.Helper()
	es := append([]ledger.Entry{user, entry(ledger.KindStatus, "")}, extra...)
	if c.rng.IntN(4) == 0 {
		id := "call_" + strconv.Itoa(c.rng.IntN(3)) // ids repeat: the projection renames
		call := ledger.Entry{Kind: ledger.KindToolCall, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel, Actor: "agent",
			Parts:    []ledger.Part{{Kind: ledger.PartText, Text: `{"q":"` + strings.Repeat("x", c.rng.IntN(400)) + `"}`}},
			Metadata: json.RawMessage(`{"toolCallId":"` + id + `","toolName":"search"}`)}
		res := call
		res.Kind, res.Trust = ledger.KindToolResult, ledger.TrustPeerUntrusted
		res.Parts = []ledger.Part{{Kind: ledger.PartText, Text: "result " + strings.Repeat("r", c.rng.IntN(1500))}}
		es = append(es, call)
		if c.rng.IntN(5) > 0 {
			es = append(es, res) // else an unanswered call
		}
	}
	if c.rng.IntN(6) == 0 {
		es = append(es, ledger.Entry{Kind: ledger.KindAudit, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit,
			Actor: "gateway", Metadata: json.RawMessage(`{"audit":"TEST"}`)})
	}
	reply := entry(ledger.KindAgentReply, "Noted: build "+strconv.Itoa(1000+c.turns)+" is scheduled. "+strings.Repeat("More. ", c.rng.IntN(40)))
	switch c.rng.IntN(8) {
	case 0:
		reply.Metadata = json.RawMessage(`{"upstreamContextId":"up-` + strconv.Itoa(c.turns) + `","upstreamTaskId":"t"}`)
	case 1:
		reply.Metadata = json.RawMessage(`{"partial":true}`)
	}
	es = append(es, reply, entry(ledger.KindStatus, ""))
	if _, err := c.led.Append(t.Context(), ledger.AppendRequest{Owner: c.owner, ContextID: c.id, Entries: es}); err != nil {
		t.Fatalf("turn %d: append: %v", c.turns, err)
	}
}

func openLedger(t *testing.T, dir string) *ledger.Store {
	t.Helper()
	led, err := ledger.Open(filepath.Join(dir, "ledger.db"), ledger.Options{NoSync: true, LargePartBytes: 4096}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	return led
}

// TestCacheEquivalence: over long conversations of varied turns (message sizes,
// compaction, artifacts, tool traffic, audits, relays' replies, memory snapshots forming),
// under several policies, a preparation through a Cache equals PlanTurn's from the
// ledger byte for byte at every turn, with two instances sharing the ledger (two caches:
// each turn prepared by one, the other reading what it missed), turns prepared by
// neither, and conversations interleaved in a cache that holds fewer of them (evictions).
func TestCacheEquivalence(t *testing.T) {
	t.Parallel()
	turns := 320
	if testing.Short() {
		turns = 120
	}
	for _, tc := range []struct {
		name   string
		policy projection.Policy
	}{
		{"memory", simPolicy},
		{"memory-limit10", projection.Policy{HistoryLimit: 10, Memory: true, Budget: projection.Budget{History: 2000}}},
		{"no-memory", projection.Policy{HistoryLimit: 20, Budget: projection.Budget{History: 2000}}},
		{"memory-small", projection.Policy{HistoryLimit: 200, Memory: true, Budget: projection.Budget{History: 600}, MaxMessageBytes: 300}},
		// A window of more than one read (48 entries): the older reads happen.
		{"memory-large", projection.Policy{HistoryLimit: 200, Memory: true, Budget: projection.Budget{History: 9000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			led := openLedger(t, t.TempDir())
			a, b := NewCache(2, 0), NewCache(0, 0) // a holds two of the three conversations
			rng := rand.New(rand.NewPCG(uint64(len(tc.name)), 38))
			var convs []*convWriter
			for i := range 3 {
				convs = append(convs, &convWriter{led: led, policy: tc.policy, owner: "peer-" + strconv.Itoa(i%2),
					id: "conv-" + strconv.Itoa(i), rng: rand.New(rand.NewPCG(uint64(i), 1))})
			}
			for range turns {
				c := convs[rng.IntN(len(convs))]
				switch k := rng.IntN(10); {
				case k < 6:
					c.turn(t, a)
				case k < 9:
					c.turn(t, b) // the other instance
				default:
					c.turn(t, nil) // a turn neither cache sees
				}
			}
			if st := a.Stats(); st.Conversations > 2 {
				t.Errorf("cache of 2 holds %d conversations", st.Conversations)
			}
		})
	}
}

// TestCacheAnotherLedger: a window is used only while the ledger continues it. The same
// cache over another ledger holding a conversation of the same owner and contextId
// (longer, shorter, as long) must not reuse what it read from the first.
func TestCacheAnotherLedger(t *testing.T) {
	t.Parallel()
	for _, turns := range []int{12, 30, 45} {
		t.Run(strconv.Itoa(turns), func(t *testing.T) {
			t.Parallel()
			cache := NewCache(0, 0)
			first := &convWriter{led: openLedger(t, t.TempDir()), policy: simPolicy, owner: "p", id: "c", rng: rand.New(rand.NewPCG(1, 2))}
			for range 30 {
				first.turn(t, cache)
			}
			second := &convWriter{led: openLedger(t, t.TempDir()), policy: simPolicy, owner: "p", id: "c", rng: rand.New(rand.NewPCG(3, 4))}
			for range turns - 1 {
				second.turn(t, nil)
			}
			second.turn(t, cache) // checked against PlanTurn on the second ledger
			second.turn(t, cache)
		})
	}
}

// TestCachePolicyChange: a window made under one policy is not used under another.
func TestCachePolicyChange(t *testing.T) {
	t.Parallel()
	cache := NewCache(0, 0)
	c := &convWriter{led: openLedger(t, t.TempDir()), policy: simPolicy, owner: "p", id: "c", rng: rand.New(rand.NewPCG(5, 6))}
	for i := range 120 {
		if i%30 == 29 {
			c.policy.Budget.History = 1000 + 500*(i/30) // the operator changed the budget
		}
		c.turn(t, cache)
	}
}

// TestCacheBounds: the cache holds at most its number of conversations and about its
// bytes, forgetting the least recently used first; a forgotten conversation is read
// afresh, with the same result.
func TestCacheBounds(t *testing.T) {
	t.Parallel()
	led := openLedger(t, t.TempDir())
	convs := make([]*convWriter, 6)
	for i := range convs {
		convs[i] = &convWriter{led: led, policy: simPolicy, owner: "p", id: "c" + strconv.Itoa(i), rng: rand.New(rand.NewPCG(uint64(i), 7))}
		for range 40 {
			convs[i].turn(t, nil)
		}
	}
	t.Run("conversations", func(t *testing.T) {
		cache := NewCache(4, 0)
		for round := range 3 {
			for i, c := range convs {
				c.turn(t, cache)
				if st := cache.Stats(); st.Conversations != min(i+1+4*min(round, 1), 4) {
					t.Fatalf("round %d, conversation %d: cache holds %d conversations, want %d", round, i, st.Conversations, min(i+1+4*min(round, 1), 4))
				}
			}
		}
		// The four most recent stay: c2..c5; c0 and c1 were evicted.
		if _, ok := cache.byKey["p\x00c1"]; ok {
			t.Errorf("c1, the least recently used, still cached")
		}
		if _, ok := cache.byKey["p\x00c5"]; !ok {
			t.Errorf("c5, the most recently used, not cached")
		}
	})
	t.Run("bytes", func(t *testing.T) {
		one := NewCache(0, 0)
		convs[0].turn(t, one)
		size := one.Stats().Bytes
		if size <= 0 {
			t.Fatalf("one conversation's window counts %d bytes", size)
		}
		cache := NewCache(100, size*5/2) // room for about two windows
		for _, c := range convs {
			c.turn(t, cache)
			st := cache.Stats()
			if st.Bytes > size*5/2 {
				t.Fatalf("cache holds %d bytes, over its bound %d", st.Bytes, size*5/2)
			}
			if st.Conversations > 3 {
				t.Fatalf("cache of ~2 windows' bytes holds %d conversations", st.Conversations)
			}
		}
		tiny := NewCache(100, 1) // no window fits: nothing is kept, every turn reads
		convs[1].turn(t, tiny)
		convs[1].turn(t, tiny)
		if st := tiny.Stats(); st.Conversations != 0 || st.Bytes != 0 {
			t.Errorf("cache of 1 byte holds %+v", st)
		}
	})
}

// TestCacheWindowStaysSmall: a long conversation's window holds what the plans use, not
// the conversation: its entries and forms stay bounded while the conversation grows.
func TestCacheWindowStaysSmall(t *testing.T) {
	t.Parallel()
	cache := NewCache(0, 0)
	c := &convWriter{led: openLedger(t, t.TempDir()), policy: simPolicy, owner: "p", id: "c", rng: rand.New(rand.NewPCG(8, 9))}
	var most int
	for i := range 400 {
		c.turn(t, cache)
		el := cache.byKey["p\x00c"]
		if i == 0 {
			continue // nothing stored before the first turn: nothing cached
		}
		if el == nil {
			t.Fatalf("turn %d: conversation not cached", i+1)
		}
		w := el.Value.(*window)
		if i > 100 {
			most = max(most, len(w.ents), w.memo.Len(), len(w.snaps))
		}
	}
	if limit := 3 * firstRead; most > limit {
		t.Errorf("window held %d entries (or forms) over 300 turns, want at most %d", most, limit)
	}
}

// TestCacheNoConversation: a conversation's first turn (nothing stored yet) plans as
// PlanTurn does and caches nothing.
func TestCacheNoConversation(t *testing.T) {
	t.Parallel()
	led := openLedger(t, t.TempDir())
	cache := NewCache(0, 0)
	user := entry(ledger.KindUserMessage, "hello")
	p, err := cache.PlanTurn(t.Context(), led, simPolicy, "p", "new", user)
	if err != nil {
		t.Fatalf("PlanTurn() error = %v", err)
	}
	in := p.Input(nil)
	want, _ := PlanTurn(t.Context(), led, simPolicy, "p", "new", 0, user)
	if diff := cmp.Diff(want.Input(nil), in); diff != "" {
		t.Errorf("first turn differs (-want +got):\n%s", diff)
	}
	if st := cache.Stats(); st.Conversations != 0 {
		t.Errorf("cache holds %d conversations after a turn of none", st.Conversations)
	}
	var nilCache *Cache
	if _, err := nilCache.PlanTurn(context.Background(), led, simPolicy, "p", "new", user); err != nil {
		t.Errorf("nil Cache PlanTurn() error = %v", err)
	}
}

// TestCacheWindowShrinks: the cache plans at once with what the previous turn used; when
// the window needs fewer entries than that (long messages after short ones), or more
// (short after long), the plan is still PlanTurn's.
func TestCacheWindowShrinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		filler func(turn int) int
	}{
		{"phases", func(turn int) int { return []int{0, 12, 0, 25, 1}[turn/40%5] }},
		{"alternating", func(turn int) int { return (turn % 7) * (turn % 7) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, policy := range []projection.Policy{simPolicy, {HistoryLimit: 200, Memory: true, Budget: projection.Budget{History: 6000}}} {
				cache := NewCache(0, 0)
				c := &convWriter{led: openLedger(t, t.TempDir()), policy: policy, owner: "p", id: "c", rng: rand.New(rand.NewPCG(10, 11)), filler: tc.filler}
				for range 200 {
					c.turn(t, cache)
				}
			}
		})
	}
}

// TestCacheMadeSnapshotNotStored: the snapshot a cached plan made is taken for the entry
// stored with the turn only when that entry holds it; a turn that stores another one (a
// model's, say) has it read from the ledger.
func TestCacheMadeSnapshotNotStored(t *testing.T) {
	t.Parallel()
	cache := NewCache(0, 0)
	c := &convWriter{led: openLedger(t, t.TempDir()), policy: simPolicy, owner: "p", id: "c", rng: rand.New(rand.NewPCG(12, 13))}
	altered := 0
	c.alter = func(extra []ledger.Entry) []ledger.Entry {
		for i := range extra {
			m, err := ledger.MemoryRecord(&extra[i])
			if err != nil || len(m.Facts) < 2 {
				continue
			}
			m.Facts, m.Summariser = m.Facts[1:], "model:other"
			extra[i].Metadata, _ = json.Marshal(m)
			altered++
		}
		return extra
	}
	for range 150 {
		c.turn(t, cache)
	}
	if altered == 0 {
		t.Fatal("no snapshot made over 150 turns")
	}
}
