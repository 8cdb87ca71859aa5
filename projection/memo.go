package projection

import (
	"slices"

	"github.com/a2a-gateway/gateway/history"
)

// Memo keeps what the plans of one conversation made, for the next plan of the same
// conversation (the turn after): each history item's projected forms by seq, the last
// memory section rendered, and what the single-text rendering filtered ([Request.TextWith]).
// Cleaning a text (history.Filter, redaction) is most of a plan's cost, and from one turn
// to the next the window shows mostly the same items.
//
// A plan made with a memo ([NewPlanMemo]) equals the plan made without one, byte for byte:
// a form is reused only for an item equal to the one it was made of, under the same
// policy (a memo given another policy starts empty); the memory section only for an equal
// memory and the same room; a filtered text only for the same text.
//
// A Memo holds what it was given until [Memo.Forget]; it is not safe for concurrent use
// (one conversation's turns use it one at a time). The zero value is empty and ready.
type Memo struct {
	cfg    config
	set    bool
	system *string // systemText(cfg), once made
	pieces map[uint64]*memoPiece
	mem    memoMemory
	facts  map[factKey]cleanText // the facts' texts cleaned for the last memory section
	texts  history.FilterMemo
}

// factKey is a text cleaned within a limit.
type factKey struct {
	text  string
	limit int
}

// memoPiece is an item and what makePiece made of it (ok false: an empty message).
type memoPiece struct {
	item Item
	pc   piece
	ok   bool
}

// memoMemory is the last memory section rendered: for mem within limit, msg (ok false:
// no fact fitted) and what it counted in Stats.
type memoMemory struct {
	mem   *Memory
	limit int
	msg   Message
	ok    bool
	st    Stats
}

// Forget drops the forms of the items with seq < before (they left the window).
func (m *Memo) Forget(before uint64) {
	for seq := range m.pieces { // deleting while ranging; the order does not matter
		if seq < before {
			delete(m.pieces, seq)
		}
	}
}

// Len is how many items' forms the memo holds.
func (m *Memo) Len() int { return len(m.pieces) }

// NewPlanMemo is [NewPlan] with m (nil: NewPlan): the same plan, the items' forms taken
// from m where it has them and kept in it.
func NewPlanMemo(history []Item, current Item, p Policy, m *Memo) (*Plan, error) {
	if m == nil {
		return NewPlan(history, current, p)
	}
	cfg, err := p.resolve()
	if err != nil {
		return nil, err
	}
	if !m.set || m.cfg != cfg {
		*m = Memo{cfg: cfg, set: true}
	}
	pl, err := newPlan(history, current, cfg, m)
	if err != nil {
		return nil, err
	}
	for j := range pl.ps { // keep the full forms the window made
		if pc := &pl.ps[j]; pc.full != nil {
			if mp := m.pieces[pc.seq]; mp != nil && mp.pc.full == nil {
				mp.pc.full = pc.full
			}
		}
	}
	return pl, nil
}

// systemText is systemText(cfg) (the memo's), made once.
func (m *Memo) systemText(cfg config) (string, error) {
	if m.system != nil {
		return *m.system, nil
	}
	s, err := systemText(cfg)
	if err == nil {
		m.system = &s
	}
	return s, err
}

// Detach drops the plan's memo: later renderings make what they need afresh (the same
// request), so the memo may serve another plan meanwhile.
func (pl *Plan) Detach() { pl.memo = nil }

// piece is makePiece(it, cfg), from the memo when it holds it for an equal item.
func (m *Memo) piece(it *Item, cfg config) (piece, bool) {
	if mp := m.pieces[it.Seq]; mp != nil && mp.item == *it {
		return mp.pc, mp.ok
	}
	mp := &memoPiece{item: *it}
	mp.pc, mp.ok = makePiece(&mp.item, cfg)
	if m.pieces == nil {
		m.pieces = make(map[uint64]*memoPiece)
	}
	m.pieces[it.Seq] = mp
	return mp.pc, mp.ok
}

// memory is memoryMessage(mem, limit, st), from the memo when mem and limit are those of
// the last call.
func (m *Memo) memory(mem *Memory, limit int, st *Stats) (Message, bool) {
	if !m.mem.sameAs(mem, limit) {
		var mst Stats
		old, cur := m.facts, make(map[factKey]cleanText, len(mem.Facts))
		cl := func(text string, limit int) (string, int) { // clean, remembered for the next section
			k := factKey{text, limit}
			c, ok := old[k]
			if !ok {
				c.s, c.n = clean(text, limit)
			}
			cur[k] = c
			return c.s, c.n
		}
		msg, ok := memoryMessageWith(mem, limit, &mst, cl)
		m.facts = cur
		m.mem = memoMemory{mem: copyMemory(mem), limit: limit, msg: msg, ok: ok, st: mst}
	}
	if m.mem.ok {
		st.MemoryBytes, st.MemoryFacts = m.mem.st.MemoryBytes, m.mem.st.MemoryFacts
		st.Redactions += m.mem.st.Redactions
	}
	return m.mem.msg, m.mem.ok
}

func (mm *memoMemory) sameAs(mem *Memory, limit int) bool {
	a := mm.mem
	if a == nil || limit != mm.limit || a.First != mem.First || a.Last != mem.Last || len(a.Facts) != len(mem.Facts) {
		return false
	}
	for i := range a.Facts {
		f, g := &a.Facts[i], &mem.Facts[i]
		if f.Text != g.Text || f.Trust != g.Trust || !slices.Equal(f.Evidence, g.Evidence) {
			return false
		}
	}
	return true
}

func copyMemory(mem *Memory) *Memory {
	c := &Memory{First: mem.First, Last: mem.Last, Facts: slices.Clone(mem.Facts)}
	for i := range c.Facts {
		c.Facts[i].Evidence = slices.Clone(c.Facts[i].Evidence)
	}
	return c
}
