package prompt

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
)

// simPolicy is the setting: a 2,000-token history budget, memory on, the default
// history limit.
var simPolicy = projection.Policy{HistoryLimit: 200, Memory: true, Budget: projection.Budget{History: 2000}}

// simConv is a conversation driven the way the turn runner drives one (History, Plan,
// the stored snapshot or a new extractive one stored with the message, Input), without
// the runner: a user message, a working status, the snapshot if made, a reply and a
// final status per turn.
type simConv struct {
	tb     testing.TB
	led    *ledger.Store
	policy projection.Policy
	turns  int
	filler int // sentences of filler per user message (each 58 bytes)
}

func newSim(tb testing.TB, policy projection.Policy) *simConv {
	led, err := ledger.Open(filepath.Join(tb.TempDir(), "ledger.db"), ledger.Options{NoSync: true}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = led.Close() })
	return &simConv{tb: tb, led: led, policy: policy, filler: 2}
}

func simText(i, filler int) string {
	return fmt.Sprintf("Turn %d: the release train for module m%d ships build %d on day %d. %s", i, i%7, 1000+i, i%30,
		strings.Repeat("Some filler words follow here to make the message longer. ", filler))
}

func entry(kind ledger.Kind, text string) ledger.Entry {
	e := ledger.Entry{Kind: kind, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Actor: "local", Role: ledger.RoleUser}
	switch kind {
	case ledger.KindAgentReply:
		e.Trust, e.Role = ledger.TrustAgent, ledger.RoleAgent
	case ledger.KindStatus:
		e.Trust, e.Role, e.State = ledger.TrustSystem, "", "completed"
	}
	if text != "" {
		e.Parts = []ledger.Part{{Kind: ledger.PartText, Text: text}}
	}
	return e
}

// prepare is the turn's preparation of current: its input and the entries to store
// with it (a new snapshot).
func (s *simConv) prepare(ctx context.Context, current ledger.Entry) (Input, []ledger.Entry) {
	pl, err := PlanTurn(ctx, s.led, s.policy, "local", "sim", 0, current)
	if err != nil {
		s.tb.Fatal(err)
	}
	b := pl.Boundary()
	if b < 2 {
		return pl.Input(nil), nil
	}
	if snap, _, ok := pl.Stored(); ok {
		return pl.Input(&snap), nil
	}
	snap, _, _, err := Extractive(ctx, s.led, s.policy, "local", "sim", b-1)
	if err != nil {
		s.tb.Fatal(err)
	}
	meta, _ := json.Marshal(snap)
	return pl.Input(&snap), []ledger.Entry{{Kind: ledger.KindMemorySnapshot, Trust: ledger.TrustModel,
		Visibility: ledger.VisibilityModel, Actor: "gateway", Metadata: meta}}
}

// turn runs one turn and returns what the agent was given.
func (s *simConv) turn(ctx context.Context) Input {
	s.turns++
	user := entry(ledger.KindUserMessage, simText(s.turns, s.filler))
	in, extra := s.prepare(ctx, user)
	entries := append(append([]ledger.Entry{user, entry(ledger.KindStatus, "")}, extra...),
		entry(ledger.KindAgentReply, "Noted: build "+strconv.Itoa(1000+s.turns)+" is scheduled."), entry(ledger.KindStatus, ""))
	if _, err := s.led.Append(ctx, ledger.AppendRequest{Owner: "local", ContextID: "sim", Entries: entries}); err != nil {
		s.tb.Fatal(err)
	}
	return in
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// TestMemoryPrefixReuse: over a long conversation under the policy (2,000-token
// history budget, memory on), at least 90% of the turns repeat at least 90% of the
// previous request as their prefix, in the single-text rendering and in the OpenAI body,
// and every request fits its budget. GATEWAY_MEMORY_TURNS sets the length (default 2,000;
// docs/performance.md has the figure for 10,000). The share depends on how many turns the
// budget holds (the boundary moves once per block, about three quarters of the window):
// it is asserted for ~200-byte messages (about 25 turns fit) and only reported for
// ~470-byte ones (about 10 fit).
func TestMemoryPrefixReuse(t *testing.T) {
	t.Parallel()
	turns := 2000
	if testing.Short() {
		turns = 300
	}
	if v, err := strconv.Atoi(os.Getenv("GATEWAY_MEMORY_TURNS")); err == nil && v > 0 {
		turns = v
	}
	for _, tc := range []struct {
		name   string
		filler int
		assert bool
	}{{"short", 2, true}, {"long", 7, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, simPolicy)
			s.filler = tc.filler
			text, body := s.reuse(t, turns)
			t.Logf("%d turns of ~%d-byte messages: %.1f%% of turns reuse ≥ 90%% of the previous text prompt, %.1f%% of the previous OpenAI body",
				turns, len(simText(turns, tc.filler)), 100*float64(text)/float64(turns-1), 100*float64(body)/float64(turns-1))
			if tc.assert && (text*10 < (turns-1)*9 || body*10 < (turns-1)*9) {
				t.Errorf("prefix reuse ≥ 90%% at %d (text) and %d (body) of %d turns, want ≥ 90%%", text, body, turns-1)
			}
		})
	}
}

// reuse runs turns turns and counts those that repeat at least 90% of the previous
// request (text prompt, OpenAI body) as their prefix; every request must fit its budget.
func (s *simConv) reuse(t *testing.T, turns int) (text, body int) {
	var prevText, prevBody string
	for i := 1; i <= turns; i++ {
		in := s.turn(t.Context())
		b, err := in.Request.OpenAI("m", true)
		if err != nil {
			t.Fatal(err)
		}
		if in.Stats.HistoryTokens > 2000 {
			t.Fatalf("turn %d: history %d tokens over the budget", i, in.Stats.HistoryTokens)
		}
		if i > 1 && commonPrefix(prevText, in.Prompt)*10 >= len(prevText)*9 {
			text++
		}
		if i > 1 && commonPrefix(prevBody, string(b))*10 >= len(prevBody)*9 {
			body++
		}
		prevText, prevBody = in.Prompt, string(b)
	}
	return text, body
}

// BenchmarkPrepareMemory is a turn's preparation (history read, plan, the stored snapshot
// found, input rendered) against the conversation's length, under the policy:
// it should stay flat (10 → 10,000 turns within 1.5×).
func BenchmarkPrepareMemory(b *testing.B) {
	for _, size := range []struct {
		name   string
		filler int
	}{{"msg=190B", 2}, {"msg=480B", 7}} {
		for _, n := range []int{10, 100, 1000, 10000} {
			b.Run(size.name+"/turns="+strconv.Itoa(n), func(b *testing.B) { benchPrepare(b, n, size.filler) })
		}
	}
}

func benchPrepare(b *testing.B, n, filler int) {
	s := newSim(b, simPolicy)
	s.filler = filler
	for range n {
		s.turn(b.Context())
	}
	user := entry(ledger.KindUserMessage, simText(n+1, s.filler))
	var in Input
	b.ReportAllocs()
	for b.Loop() {
		in, _ = s.prepare(b.Context(), user)
	}
	b.ReportMetric(float64(in.Stats.MemoryFacts), "facts")
	b.ReportMetric(float64(in.Stats.HistoryMessages), "messages")
}

// BenchmarkPrepareTurn is what a live turn's preparation costs against the conversation's
// length L, under the policy: one op is the preparation of turn L (history read,
// plan, the stored snapshot found or, when the boundary moved, the extractive one made,
// input rendered), the previous turn's entries (user message, statuses, snapshot, reply)
// appended untimed before it. Modes: uncached (PlanTurn from the ledger, as before the
// Cache), warm (through the Cache that prepared every earlier turn of the conversation,
// as a running gateway's) and cold (through an empty Cache: the first turn after a
// restart). Each conversation gives L/10 timed turns
// (at least one): for L=10 each op is turn 10 of its own conversation; for L=10,000 the
// ops are turns 10,000 onwards of one conversation.
func BenchmarkPrepareTurn(b *testing.B) {
	pools := map[string]*benchPool{} // shared by the modes; closed with b's cleanup
	top := b
	for _, size := range []struct {
		name   string
		filler int
	}{{"msg=190B", 2}, {"msg=480B", 7}} {
		for _, n := range []int{10, 100, 1000, 10000} {
			key := size.name + "/turns=" + strconv.Itoa(n)
			for _, mode := range []string{"uncached", "cold", "warm"} {
				b.Run(mode+"/"+key, func(b *testing.B) {
					if pools[key] == nil {
						pools[key] = newBenchPool(top, n, size.filler)
					}
					pools[key].run(b, mode)
				})
			}
		}
	}
}

// benchPool holds conversations of one length, built to L-2 turns, for the modes of
// BenchmarkPrepareTurn to take (a conversation used is not given again).
type benchPool struct {
	led    *ledger.Store
	turns  int // L
	filler int
	next   int // conversations made so far
	long   *benchConv
	// snapTime is the time prepare spent making snapshots (Extractive).
	snapTime time.Duration
}

type benchConv struct {
	id    string
	turns int
	cache *Cache // the cache it was built through: warm since its first turn
}

func newBenchPool(b *testing.B, turns, filler int) *benchPool {
	led, err := ledger.Open(filepath.Join(b.TempDir(), "ledger.db"), ledger.Options{NoSync: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = led.Close() })
	return &benchPool{led: led, turns: turns, filler: filler}
}

// conv returns a conversation at L-2 turns (built now through a cache of its own), or,
// for L=10,000, the one long conversation wherever it is.
func (p *benchPool) conv(b *testing.B) *benchConv {
	if p.long != nil {
		return p.long
	}
	p.next++
	c := &benchConv{id: "c" + strconv.Itoa(p.next), cache: NewCache(1, 0)}
	for c.turns < p.turns-2 {
		p.turn(b, c.cache, c)
	}
	if p.turns >= 10000 {
		p.long = c
	}
	return c
}

// turn prepares the next turn of c through cache (nil: PlanTurn) and appends it; the
// preparation is what the benchmark times (prepare).
func (p *benchPool) turn(b *testing.B, cache *Cache, c *benchConv) Input {
	c.turns++
	user := entry(ledger.KindUserMessage, simText(c.turns, p.filler))
	in, extra := p.prepare(b, cache, c, user)
	p.store(b, c, user, extra)
	return in
}

func (p *benchPool) prepare(b *testing.B, cache *Cache, c *benchConv, user ledger.Entry) (Input, []ledger.Entry) {
	ctx := b.Context()
	var pl *Plan
	var err error
	if cache == nil {
		pl, err = PlanTurn(ctx, p.led, simPolicy, "local", c.id, 0, user)
	} else {
		pl, err = cache.PlanTurn(ctx, p.led, simPolicy, "local", c.id, user)
	}
	if err != nil {
		b.Fatal(err)
	}
	bd := pl.Boundary()
	if bd < 2 {
		return pl.Input(nil), nil
	}
	if snap, _, ok := pl.Stored(); ok {
		return pl.Input(&snap), nil
	}
	start := time.Now()
	snap, _, _, err := pl.Extractive(ctx, p.led, simPolicy, "local", c.id, bd-1)
	if err != nil {
		b.Fatal(err)
	}
	p.snapTime += time.Since(start)
	meta, _ := json.Marshal(snap)
	return pl.Input(&snap), []ledger.Entry{{Kind: ledger.KindMemorySnapshot, Trust: ledger.TrustModel,
		Visibility: ledger.VisibilityModel, Actor: "gateway", Metadata: meta}}
}

func (p *benchPool) store(b *testing.B, c *benchConv, user ledger.Entry, extra []ledger.Entry) {
	entries := append(append([]ledger.Entry{user, entry(ledger.KindStatus, "")}, extra...),
		entry(ledger.KindAgentReply, "Noted: build "+strconv.Itoa(1000+c.turns)+" is scheduled."), entry(ledger.KindStatus, ""))
	if _, err := p.led.Append(b.Context(), ledger.AppendRequest{Owner: "local", ContextID: c.id, Entries: entries}); err != nil {
		b.Fatal(err)
	}
}

// run times b.N preparations in mode: per conversation, turn L-1 prepared untimed
// (through the mode's cache: for warm, the one the conversation was built through; for
// cold, a new one, and a new one again for each timed turn), then up to L/10 timed
// turns, each after the previous one's entries were appended (untimed).
func (p *benchPool) run(b *testing.B, mode string) {
	per := max(1, p.turns/10)
	var in Input
	var turns int
	var snaps time.Duration
	b.ReportAllocs()
	b.StopTimer()
	for i := 0; i < b.N; {
		c := p.conv(b)
		var cache *Cache
		switch mode {
		case "warm":
			cache = c.cache // as a gateway's that ran the conversation so far
		case "cold":
			cache = NewCache(1, 0)
		}
		p.turn(b, cache, c) // turn L-1 (or the next of the long one)
		if mode == "warm" && p.long != nil {
			// The long conversation is shared by the modes: its cache missed the others'
			// turns (more than a window reads: it starts afresh). Warm it up again, its
			// memory sources included, as a running gateway's would be.
			for range 20 {
				p.turn(b, cache, c)
			}
		}
		for j := 0; j < per && i < b.N; j, i = j+1, i+1 {
			c.turns++
			user := entry(ledger.KindUserMessage, simText(c.turns, p.filler))
			if mode == "cold" {
				cache = NewCache(1, 0)
			}
			b.StartTimer()
			before := p.snapTime
			var extra []ledger.Entry
			in, extra = p.prepare(b, cache, c, user)
			b.StopTimer()
			snaps += p.snapTime - before
			turns += c.turns
			p.store(b, c, user, extra)
		}
	}
	b.ReportMetric(float64(turns)/float64(b.N), "turn")
	b.ReportMetric(float64(snaps.Nanoseconds())/float64(b.N), "snapshot-ns/op") // part of ns/op: the turns whose boundary moved
	b.ReportMetric(float64(in.Stats.MemoryFacts), "facts")
	b.ReportMetric(float64(in.Stats.HistoryMessages), "messages")
}
