package redact

import (
	"math"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// The Pike VM the stream stages run (their step loop is streamStage.advance): each of
// Text's patterns compiled to the program package regexp runs (streamProg), the thread
// queue (squeue) and the closure over a thread's empty-width instructions (add), as
// package regexp's NFA matcher has them; plus what a stage needs to know where it may
// cut: which runes can start a match, and whether a search started after a given rune
// behaves as one started at the beginning of a text.

// streamProg is one of Text's patterns compiled for simulation. It is immutable.
type streamProg struct {
	red        *redactor
	prog       *syntax.Prog
	keeps      bool                       // the replacement starts with group 1, which starts the match (see sqEntry.keep)
	lateAssert bool                       // an assertion follows a rune instruction (\b, \z after the first rune)
	used       syntax.EmptyOp             // every assertion in prog
	first      [utf8.RuneSelf]bool        // a match can start with this ASCII character
	firstOther bool                       // ... or with another rune
	fresh      [3][utf8.RuneSelf + 1]bool // freshSameCompute by class of prev and next (RuneSelf: unknown)
}

var streamProgs = sync.OnceValue(func() []*streamProg {
	progs := make([]*streamProg, len(redactors))
	for i := range redactors {
		progs[i] = newStreamProg(&redactors[i])
	}
	return progs
})

// allAssertions makes every assertion hold: a closure under it is the union of all.
const allAssertions = ^syntax.EmptyOp(0)

func newStreamProg(r *redactor) *streamProg {
	// The same program package regexp runs (regexp.compile).
	re, err := syntax.Parse(r.re.String(), syntax.Perl)
	if err != nil {
		panic(err)
	}
	p, err := syntax.Compile(re.Simplify())
	if err != nil {
		panic(err)
	}
	sp := &streamProg{red: r, prog: p, keeps: strings.HasPrefix(r.repl, "${1}") && groupOneLeads(p)}
	for _, in := range p.Inst {
		if in.Op == syntax.InstEmptyWidth {
			sp.used |= syntax.EmptyOp(in.Arg)
		}
	}
	sp.lateAssert = assertsAfterRune(p)
	q := newSqueue(len(p.Inst))
	for _, e := range sp.freshList(&q, allAssertions, 0, false) {
		in := &p.Inst[e.pc]
		if in.Op == syntax.InstMatch {
			panic("redact: redaction pattern matches the empty string: " + r.re.String())
		}
		for b := range utf8.RuneSelf {
			if accepts(in, rune(b)) {
				sp.first[b] = true
			}
		}
		if mayAcceptNonASCII(in) {
			sp.firstOther = true
		}
	}
	for class, prev := range [3]rune{'\n', 'a', ' '} {
		for next := range utf8.RuneSelf + 1 {
			sp.fresh[class][next] = sp.freshSameCompute(&q, prev, rune(next), next == utf8.RuneSelf)
		}
	}
	return sp
}

// groupOneLeads reports whether every path from the start enters group 1 before it
// consumes a rune: then the text a replacement "${1}…" keeps begins the match.
func groupOneLeads(p *syntax.Prog) bool {
	seen := make([]bool, len(p.Inst))
	var walk func(pc uint32) bool
	walk = func(pc uint32) bool {
		for !seen[pc] {
			seen[pc] = true
			in := &p.Inst[pc]
			switch in.Op {
			case syntax.InstCapture:
				if in.Arg == 2 {
					return true
				}
				pc = in.Out
			case syntax.InstAlt, syntax.InstAltMatch:
				if !walk(in.Out) {
					return false
				}
				pc = in.Arg
			case syntax.InstEmptyWidth, syntax.InstNop:
				pc = in.Out
			default:
				return false // a rune, a match or a failure before group 1
			}
		}
		return true
	}
	return walk(uint32(p.Start))
}

// assertsAfterRune reports whether an empty-width instruction can be reached from a rune
// instruction without consuming another rune: whether the threads' step over a rune may
// need the rune after it (else only a new thread's assertions look at the text).
func assertsAfterRune(p *syntax.Prog) bool {
	seen := make([]bool, len(p.Inst))
	var walk func(pc uint32) bool
	walk = func(pc uint32) bool {
		for pc != 0 && !seen[pc] {
			seen[pc] = true
			in := &p.Inst[pc]
			switch in.Op {
			case syntax.InstEmptyWidth:
				return true
			case syntax.InstAlt, syntax.InstAltMatch:
				if walk(in.Out) {
					return true
				}
				pc = in.Arg
			case syntax.InstNop, syntax.InstCapture:
				pc = in.Out
			default:
				return false
			}
		}
		return false
	}
	for _, in := range p.Inst {
		switch in.Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			if walk(in.Out) {
				return true
			}
		}
	}
	return false
}

// mayAcceptNonASCII reports whether in may accept a rune outside ASCII.
func mayAcceptNonASCII(in *syntax.Inst) bool {
	switch in.Op {
	case syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
		return true
	case syntax.InstRune1:
		return in.Rune[0] >= utf8.RuneSelf
	case syntax.InstRune:
		if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
			return true
		}
		if len(in.Rune) == 1 {
			return in.Rune[0] >= utf8.RuneSelf
		}
		for i := 1; i < len(in.Rune); i += 2 {
			if in.Rune[i] >= utf8.RuneSelf {
				return true
			}
		}
	}
	return false
}

// accepts reports whether the rune instruction in consumes r, as package regexp's step.
func accepts(in *syntax.Inst, r rune) bool {
	switch in.Op {
	case syntax.InstRune:
		return in.MatchRune(r)
	case syntax.InstRune1:
		return r == in.Rune[0]
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return r != '\n'
	}
	return false
}

// freshEntry is an instruction a new thread reaches, with the capture slots set on its
// way there.
type freshEntry struct {
	pc   uint32
	caps uint64
}

// freshList returns, in priority order, the rune and match instructions a thread started
// under the assertions ctx reaches; with filter, only those accepting next, and matches.
func (sp *streamProg) freshList(q *squeue, ctx syntax.EmptyOp, next rune, filter bool) []freshEntry {
	q.clear()
	var out []freshEntry
	var walk func(pc uint32, caps uint64)
	walk = func(pc uint32, caps uint64) {
		for pc != 0 && !q.contains(pc) {
			q.push(pc)
			in := &sp.prog.Inst[pc]
			switch in.Op {
			case syntax.InstFail:
				return
			case syntax.InstAlt, syntax.InstAltMatch:
				walk(in.Out, caps)
				pc = in.Arg
			case syntax.InstEmptyWidth:
				if syntax.EmptyOp(in.Arg)&^ctx != 0 {
					return
				}
				pc = in.Out
			case syntax.InstNop:
				pc = in.Out
			case syntax.InstCapture:
				if in.Arg < 64 {
					caps |= 1 << in.Arg
				}
				pc = in.Out
			default:
				if !filter || in.Op == syntax.InstMatch || accepts(in, next) {
					out = append(out, freshEntry{pc, caps})
				}
				return
			}
		}
	}
	walk(uint32(sp.prog.Start), 0)
	return out
}

// freshSameCompute reports whether a search started just after prev and one started at
// the beginning of a text behave alike on a text that continues with next (unknown: with
// any rune): whether the text after a cut between prev and next can be searched on its
// own.
func (sp *streamProg) freshSameCompute(q *squeue, prev, next rune, unknown bool) bool {
	if !unknown {
		z := syntax.EmptyOpContext(prev, next) & sp.used
		f := syntax.EmptyOpContext(-1, next) & sp.used
		if z == f {
			return true
		}
		return slices.Equal(sp.freshList(q, z, next, true), sp.freshList(q, f, next, true))
	}
	// The assertions depend on the next rune only through these classes.
	for _, n := range [...]rune{'a', ' ', '\n'} {
		z := syntax.EmptyOpContext(prev, n) & sp.used
		f := syntax.EmptyOpContext(-1, n) & sp.used
		if z != f && !slices.Equal(sp.freshList(q, z, 0, false), sp.freshList(q, f, 0, false)) {
			return false
		}
	}
	return true
}

// squeue is a set of instructions in insertion (priority) order, as package regexp's
// queue; an entry is live when a thread waits at it (a rune or match instruction), with
// the position its match would start at. Membership is a bit set, not package regexp's
// sparse array of one uint32 per instruction: a Stream lives as long as a reply and the
// URL pattern compiles to 1,600 instructions (its bounded repeats unrolled), which made
// 13 KB of sparse arrays per Stream; the bits take 200 bytes, and clear unsets only the
// entries' bits.
type squeue struct {
	size  int      // instructions in the program; bits is made on first use
	bits  []uint64 // bit pc: pc is in dense
	dense []sqEntry
}

type sqEntry struct {
	pc    uint32
	live  bool
	start int
	// keep is where the part of the thread's match that its replacement changes can
	// begin at the earliest: the end of group 1 once the thread has passed it (the
	// replacement "${1}…" writes group 1, which starts the match, unchanged), the start
	// for a pattern whose whole match is replaced, and -1 while a keeping pattern's
	// thread is still inside group 1 ([inGroup]: it begins no earlier than where the
	// thread is).
	keep int
}

// inGroup is the keep of a thread still inside group 1.
const inGroup = math.MinInt

// keepAt is the keep of a thread started at start (see sqEntry.keep).
func (sp *streamProg) keepAt(start int) int {
	if sp.keeps {
		return inGroup
	}
	return start
}

func newSqueue(n int) squeue { return squeue{size: n} }

// consumes reports whether a live thread of q, before the first match (which cuts the
// rest off), consumes r: then the assertions after r need the next rune.
func (sp *streamProg) consumes(q *squeue, r rune) bool {
	for _, e := range q.dense {
		if !e.live {
			continue
		}
		in := &sp.prog.Inst[e.pc]
		if in.Op == syntax.InstMatch {
			return false
		}
		if accepts(in, r) {
			return true
		}
	}
	return false
}

func (q *squeue) contains(pc uint32) bool {
	return q.bits != nil && q.bits[pc/64]&(1<<(pc%64)) != 0
}

func (q *squeue) push(pc uint32) int {
	if q.bits == nil {
		q.bits = make([]uint64, (q.size+63)/64)
	}
	j := len(q.dense)
	q.dense = append(q.dense, sqEntry{pc: pc})
	q.bits[pc/64] |= 1 << (pc % 64)
	return j
}

func (q *squeue) clear() {
	for _, e := range q.dense {
		q.bits[e.pc/64] &^= 1 << (e.pc % 64)
	}
	q.dense = q.dense[:0]
}

// keep removes the entries for which ok is false, keeping the others' order.
func (q *squeue) keep(ok func(sqEntry) bool) {
	kept := q.dense[:0]
	for _, e := range q.dense {
		if ok(e) {
			kept = append(kept, e)
		} else {
			q.bits[e.pc/64] &^= 1 << (e.pc % 64)
		}
	}
	q.dense = kept
}

func (q *squeue) hasLive() bool {
	for _, e := range q.dense {
		if e.live {
			return true
		}
	}
	return false
}

// add adds the thread at pc with the given match start and keep, at position at, and
// everything it reaches under the assertions ctx, as package regexp's add (which carries
// the capture slots as keep is carried). When diff is not nil it is set if an assertion
// on the way holds under ctx but not under alt or the reverse.
func (sp *streamProg) add(q *squeue, pc uint32, start, keep, at int, ctx, alt syntax.EmptyOp, diff *bool) {
	for pc != 0 && !q.contains(pc) {
		j := q.push(pc)
		in := &sp.prog.Inst[pc]
		switch in.Op {
		case syntax.InstFail:
			return
		case syntax.InstAlt, syntax.InstAltMatch:
			sp.add(q, in.Out, start, keep, at, ctx, alt, diff)
			pc = in.Arg
		case syntax.InstEmptyWidth:
			op := syntax.EmptyOp(in.Arg)
			ok := op&^ctx == 0
			if diff != nil && ok != (op&^alt == 0) {
				*diff = true
			}
			if !ok {
				return
			}
			pc = in.Out
		case syntax.InstCapture:
			if sp.keeps && in.Arg == 3 {
				keep = at // group 1 ends here
			}
			pc = in.Out
		case syntax.InstNop:
			pc = in.Out
		default:
			q.dense[j].live = true
			q.dense[j].start = start
			q.dense[j].keep = keep
			return
		}
	}
}
