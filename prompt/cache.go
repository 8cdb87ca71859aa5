package prompt

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/memory"
	"github.com/a2a-gateway/gateway/projection"
)

// Cache keeps, per conversation (owner and contextId), what the last turn's preparation
// read and made ([Cache.PlanTurn]): the newest history entries decoded (from the window's
// start to the last seq seen), their projector items, the snapshots decoded and the
// projection's memo of their forms. The next turn reads from the ledger only the entries
// appended since (by this instance or any other sharing the ledger), so its cost does not
// depend on the conversation's length. It is an optimisation only: a plan made through
// the cache equals the plan [PlanTurn] makes from the ledger, byte for byte.
//
// It rests on the ledger being append-only (an entry never changes once stored). A window
// is used only while the ledger continues it: the first entry read after it must follow
// its last seq and chain to its hash (or, when nothing was appended, the last entry must
// still have that hash), and its policy must be the turn's. Otherwise, or when more was
// appended than a window is worth reading, the turn reads as PlanTurn does.
//
// The cache is bounded by conversations and by an estimate of the bytes it holds, and
// forgets the least recently used conversation first. It is safe for concurrent use; one
// conversation's window is used by one preparation at a time, from PlanTurn until its
// plan is rendered ([Plan.Input]; a second, concurrent one reads the ledger).
type Cache struct {
	maxConvs int
	maxBytes int64

	mu    sync.Mutex // guards what follows; never held across a read
	lru   list.List  // of *window, the most recently used first
	byKey map[string]*list.Element
	bytes int64
}

// Defaults of [NewCache].
const (
	DefaultCacheConversations = 1024
	DefaultCacheBytes         = 64 << 20
)

// NewCache returns an empty cache of at most conversations windows (0:
// DefaultCacheConversations) holding at most about bytes (0: DefaultCacheBytes).
func NewCache(conversations int, bytes int64) *Cache {
	if conversations <= 0 {
		conversations = DefaultCacheConversations
	}
	if bytes <= 0 {
		bytes = DefaultCacheBytes
	}
	return &Cache{maxConvs: conversations, maxBytes: bytes, byKey: make(map[string]*list.Element)}
}

// CacheStats is what a Cache holds.
type CacheStats struct {
	Conversations int
	Bytes         int64 // the estimate the bound applies to
}

// Stats returns what c holds.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Conversations: c.lru.Len(), Bytes: c.bytes}
}

// window is one conversation's cached history (see Cache).
type window struct {
	key              string
	owner, contextID string
	policy           projection.Policy
	head             uint64 // the seq of the newest ledger entry read (of any kind)
	hash             string // its hash
	// ents are the newest entries History keeps (seq < head+1), oldest first, inflated;
	// items and ups parallel them. all: nothing older is kept by History.
	ents  []ledger.Entry
	items []projection.Item
	ups   []upstream
	all   bool
	used  int // how many entries the last plan used
	// early are the oldest memory sources (Sources) of the range 1..earlySpan (fixed once
	// the conversation is longer than the range Sources reads them from).
	early     []ledger.Entry
	earlySpan uint64
	snaps     map[uint64]*ledger.MemorySnapshot
	// made is the snapshot the last plan made (Plan.Extractive): the MEMORY_SNAPSHOT
	// entry stored with it is taken as made instead of decoded (resume).
	made  *madeSnapshot
	memo  *projection.Memo
	bytes int64
}

// maxGap bounds what a turn reads after its window's last seq: past it, a read as
// PlanTurn's (which stops at what the window needs) costs less.
const maxGap = 4096

// PlanTurn is [PlanTurn] for the conversation's next message current (beforeSeq 0),
// through c: the same plan, the same errors. A nil c reads as PlanTurn.
func (c *Cache) PlanTurn(ctx context.Context, r Reader, policy projection.Policy, owner, contextID string, current ledger.Entry) (*Plan, error) {
	if c == nil {
		return PlanTurn(ctx, r, policy, owner, contextID, 0, current)
	}
	key := owner + "\x00" + contextID // NUL is not allowed in an owner
	w, err := c.take(key).resume(ctx, r, policy)
	if err != nil {
		return nil, err
	}
	if w == nil {
		if w, err = newWindow(ctx, r, policy, key, owner, contextID); err != nil || w == nil {
			if err != nil {
				return nil, err
			}
			return PlanTurn(ctx, r, policy, owner, contextID, 0, current) // no conversation yet
		}
	}
	pl, used, err := w.plan(ctx, r, current)
	if err != nil {
		return nil, err
	}
	w.used = used
	w.trim(used + step(policy))
	pl.done = func() { c.put(w) }
	return pl, nil
}

// take removes key's window from the cache and returns it (nil: none).
func (c *Cache) take(key string) *window {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[key]
	if el == nil {
		return nil
	}
	w := c.lru.Remove(el).(*window)
	delete(c.byKey, key)
	c.bytes -= w.bytes
	return w
}

// put stores w as the most recently used window and evicts the least recently used
// ones while the cache is over a bound (w too, if it alone is).
func (c *Cache) put(w *window) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[w.key]; el != nil { // a concurrent preparation's window
		c.bytes -= c.lru.Remove(el).(*window).bytes
	}
	c.byKey[w.key] = c.lru.PushFront(w)
	c.bytes += w.bytes
	for c.lru.Len() > c.maxConvs || (c.bytes > c.maxBytes && c.lru.Len() > 0) {
		old := c.lru.Remove(c.lru.Back()).(*window)
		delete(c.byKey, old.key)
		c.bytes -= old.bytes
	}
}

// newWindow is an empty window at the conversation's head; nil when it does not exist.
func newWindow(ctx context.Context, r Reader, policy projection.Policy, key, owner, contextID string) (*window, error) {
	head, err := r.LastBefore(ctx, owner, contextID, 0, 1, nil)
	if errors.Is(err, ledger.ErrNotFound) || (err == nil && len(head) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return &window{key: key, owner: owner, contextID: contextID, policy: policy, head: head[0].Seq, hash: head[0].Hash,
		snaps: make(map[uint64]*ledger.MemorySnapshot), memo: new(projection.Memo)}, nil
}

// resume brings w up to the conversation's head: the entries appended since w.head, read
// and kept. It returns nil (read afresh) for a nil w, another policy, a ledger that does
// not continue w, or too much to read.
func (w *window) resume(ctx context.Context, r Reader, policy projection.Policy) (*window, error) {
	if w == nil || w.policy != policy {
		return nil, nil
	}
	es, err := r.Range(ctx, w.owner, w.contextID, w.head, maxGap)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	if len(es) == 0 { // nothing new: is the last entry still the one seen?
		if w.head < 1 {
			return nil, nil
		}
		last, err := r.Range(ctx, w.owner, w.contextID, w.head-1, 1)
		if err != nil && !errors.Is(err, ledger.ErrNotFound) {
			return nil, fmt.Errorf("read history: %w", err)
		}
		if len(last) != 1 || last[0].Seq != w.head || last[0].Hash != w.hash {
			return nil, nil
		}
		return w, nil
	}
	if len(es) == maxGap || es[0].Seq != w.head+1 || es[0].PrevHash != w.hash {
		return nil, nil
	}
	keep := keeper(policy)
	var kept []ledger.Entry
	for i := range es {
		if keep(&es[i]) {
			kept = append(kept, es[i])
			w.made.known(&es[i], w.snaps)
		}
	}
	w.made = nil
	if err := inflate(ctx, r, kept); err != nil {
		return nil, err
	}
	w.add(kept, false)
	w.head, w.hash = es[len(es)-1].Seq, es[len(es)-1].Hash
	return w, nil
}

// keeper is what History keeps of the ledger under policy.
func keeper(policy projection.Policy) func(*ledger.Entry) bool {
	if policy.Memory {
		return conversationalOrMemory
	}
	return Conversational
}

// step is how many entries PlanTurn reads at a time under policy.
func step(policy projection.Policy) int {
	if policy.Memory {
		return min(historyMax(policy), firstRead)
	}
	return historyMax(policy)
}

// add puts es (kept entries, oldest first) at the window's end, or before its start
// (older, read because a plan needed them).
func (w *window) add(es []ledger.Entry, older bool) {
	items := make([]projection.Item, len(es))
	ups := make([]upstream, len(es))
	for i := range es {
		items[i], ups[i] = Item(&es[i]), upstreamOf(&es[i])
		w.bytes += entryBytes(&es[i])
	}
	if older {
		w.ents, w.items, w.ups = append(es, w.ents...), append(items, w.items...), append(ups, w.ups...)
		return
	}
	w.ents, w.items, w.ups = append(w.ents, es...), append(w.items, items...), append(w.ups, ups...)
}

// entryBytes estimates what the cache holds for an entry: the entry, its item and the
// projection's forms of it (each text about three times over).
func entryBytes(e *ledger.Entry) int64 {
	n := 512 + len(e.Metadata) + len(e.Hash) + len(e.PrevHash) + len(e.ID) + len(e.TaskID)
	for i := range e.Parts {
		n += 3*len(e.Parts[i].Text) + len(e.Parts[i].Data) + len(e.Parts[i].Raw) + 64
	}
	return int64(n)
}

// plan is PlanTurn's loop over the window: the newest step entries, then step more while
// the plan needs older ones (reading them from the ledger when the window does not hold
// them), up to History's number. It returns the plan and how many entries it used. It
// first plans at once with what the previous turn used (w.used): that plan is the loop's
// when the loop would have read that far (the plan of one step less needed older
// entries) and stopped there; otherwise the loop runs from the first step.
func (w *window) plan(ctx context.Context, r Reader, current ledger.Entry) (*Plan, int, error) {
	if w.used > 0 {
		pl, n, ok, err := w.planAt(ctx, r, current, w.used)
		if err != nil || ok {
			return pl, n, err
		}
	}
	return w.planFrom(ctx, r, current, 0)
}

// planAt plans with the loop's first read size at or past guess, ok false when the loop
// would not have read that far.
func (w *window) planAt(ctx context.Context, r Reader, current ledger.Entry, guess int) (*Plan, int, bool, error) {
	full, st := historyMax(w.policy), step(w.policy)
	var n, prev, got int
	for n < guess {
		ask := min(st, full-n)
		if err := w.hold(ctx, r, n+ask); err != nil {
			return nil, 0, false, err
		}
		got = min(ask, len(w.ents)-n)
		prev, n = n, n+got
		if got < st || n >= full {
			break
		}
	}
	pl, err := w.newPlan(n, current)
	if err != nil {
		return nil, 0, false, err
	}
	if prev > 0 && !pl.plan.NeedsOlderWithin(prev) {
		return nil, 0, false, nil // the loop stops before n
	}
	if got < st || n >= full || !pl.plan.NeedsOlder() {
		return pl, n, true, nil
	}
	pl, n, err = w.planFrom(ctx, r, current, n)
	return pl, n, err == nil, err
}

// planFrom is PlanTurn's loop from n entries planned (whose plan needed older ones).
func (w *window) planFrom(ctx context.Context, r Reader, current ledger.Entry, n int) (*Plan, int, error) {
	full, st := historyMax(w.policy), step(w.policy)
	for {
		ask := min(st, full-n)
		if err := w.hold(ctx, r, n+ask); err != nil {
			return nil, 0, err
		}
		got := min(ask, len(w.ents)-n)
		n += got
		pl, err := w.newPlan(n, current)
		if err != nil || got < st || n >= full || !pl.plan.NeedsOlder() {
			return pl, n, err
		}
	}
}

// newPlan plans current with the newest n entries of the window.
func (w *window) newPlan(n int, current ledger.Entry) (*Plan, error) {
	from := len(w.ents) - n
	pl, err := newPlan(w.ents[from:], w.items[from:], w.ups[from:], w.policy, w.owner, current, w.memo)
	if err != nil {
		return nil, err
	}
	pl.snaps, pl.w = w.snaps, w
	return pl, nil
}

// sources is Sources(ctx, r, w's conversation, last, n): the oldest sources kept from the
// last call (when their range is the same), the newest found among the window's entries
// when it holds n of them up to last (or all there are).
func (w *window) sources(ctx context.Context, r Reader, last uint64, n int) (early, recent []ledger.Entry, err error) {
	if span := min(last, uint64(4*n)); w.earlySpan != span {
		e, _, err := Sources(ctx, r, w.owner, w.contextID, span, n)
		if err != nil {
			return nil, nil, err
		}
		for i := range w.early {
			w.bytes -= entryBytes(&w.early[i])
		}
		for i := range e {
			w.bytes += entryBytes(&e[i])
		}
		w.early, w.earlySpan = e, span
	}
	for i := len(w.ents) - 1; i >= 0 && len(recent) < n; i-- {
		if e := &w.ents[i]; e.Seq <= last && memory.Source(e) {
			recent = append(recent, *e)
		}
	}
	if len(recent) < n && !w.all {
		_, recent, err = Sources(ctx, r, w.owner, w.contextID, last, n)
		return slices.Clone(w.early), recent, err
	}
	slices.Reverse(recent)
	return slices.Clone(w.early), recent, nil
}

// hold makes the window hold at least n entries, or all there are, reading older ones as
// History does.
func (w *window) hold(ctx context.Context, r Reader, n int) error {
	if w.all || len(w.ents) >= n {
		return nil
	}
	before := w.head + 1
	if len(w.ents) > 0 {
		before = w.ents[0].Seq
	}
	want := n - len(w.ents)
	older, err := historyN(ctx, r, w.policy, w.owner, w.contextID, before, want)
	if err != nil {
		return err
	}
	w.all = len(older) < want
	w.add(older, true)
	return nil
}

// trim keeps the newest n entries of the window and forgets what it held of the others.
func (w *window) trim(n int) {
	drop := len(w.ents) - n
	if drop <= 0 {
		return
	}
	for i := range w.ents[:drop] {
		w.bytes -= entryBytes(&w.ents[i])
	}
	first := w.ents[drop].Seq
	// Re-sliced, not copied: a plan made from the window may still hold its entries, and
	// append copies what is live when the arrays grow.
	w.ents, w.items, w.ups = w.ents[drop:], w.items[drop:], w.ups[drop:]
	w.all = false
	w.memo.Forget(first)
	for seq := range w.snaps { // deleting while ranging; the order does not matter
		if seq < first {
			delete(w.snaps, seq)
		}
	}
}

// madeSnapshot is a snapshot made for a turn and its record's encoding, which is what the
// MEMORY_SNAPSHOT entry the turn stores holds (the ledger keeps compact, HTML-escaped
// JSON: json.Marshal's).
type madeSnapshot struct {
	snap   ledger.MemorySnapshot
	record []byte
}

// madeOf returns snap as made, nil when decoding its encoding would not give it back
// exactly (a string that is not valid UTF-8 reads back otherwise).
func madeOf(snap ledger.MemorySnapshot) *madeSnapshot {
	valid := utf8.ValidString(snap.Summariser)
	facts := slices.Clone(snap.Facts)
	for i := range facts {
		f := &facts[i]
		valid = valid && utf8.ValidString(f.Text) && utf8.ValidString(string(f.Trust))
		f.Evidence = slices.Clone(f.Evidence)
		for _, ev := range f.Evidence {
			valid = valid && utf8.ValidString(ev.Hash)
		}
	}
	record, err := json.Marshal(snap)
	if !valid || err != nil {
		return nil
	}
	snap.Facts = facts
	return &madeSnapshot{snap: snap, record: record}
}

// known puts m's snapshot in snaps as the record of e when e stores it.
func (m *madeSnapshot) known(e *ledger.Entry, snaps map[uint64]*ledger.MemorySnapshot) {
	if m != nil && e.Kind == ledger.KindMemorySnapshot && bytes.Equal(e.Metadata, m.record) {
		snap := m.snap
		snaps[e.Seq] = &snap
	}
}
