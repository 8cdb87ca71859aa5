package redact

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// MaxHeld bounds the text a [Stream] holds back: 16 KiB.
const MaxHeld = 16 << 10

// Stream redacts a text that arrives in chunks (an agent's reply streamed token by
// token) exactly as [Text] redacts the whole text (DESIGN X-3): for every text s and
// every way of splitting s into chunks, the outputs of Write for the chunks followed by the
// output of Flush concatenate to Text(s), and Redactions then counts the credentials
// Text replaced in s. Chunk boundaries may fall anywhere, even inside a UTF-8 character;
// no returned string splits one (each is valid UTF-8 when the input is).
//
// Write returns at once the text that no replacement can still change, and holds back
// only what a match may yet replace: from the first character that could begin a
// credential replaced whole ("sk-", "AKIA", "eyJ", "-----BEGIN", an 's' that could begin
// "sk-ant-" even inside a word), and after the part a pattern keeps (its group 1): the
// password after "scheme://user", the token after "Authorization: Bearer " or "bearer ",
// the value after an AWS secret's name. A URL's scheme and user, a header's name, and
// plain words go out as they arrive: a chunk ending in "hello wor" releases all of it.
// (Text after a credential waits until the match can be cut off: the next character.)
//
// # Bound
//
// After a Write the held text never exceeds [MaxHeld] bytes (counted over all of
// Text's passes, an incomplete UTF-8 character at the end included). Where it would, the
// oldest held text is released early, by the first rule that applies:
//
//   - a long run that no match can span is cut where no candidate match crosses (a word
//     longer than the bound is split; a pattern anchored at \b may then see a boundary the
//     whole text does not have, which can only redact more);
//   - a candidate that has already matched, or that would match if the text ended here (a
//     private key block longer than the bound, whose END line has not come yet; a token of
//     thousands of characters after "sk-ant-" or "Bearer "), is replaced by its
//     placeholder now and the rest of the match is dropped as it arrives: the key block up
//     to its END line, the token up to its last character;
//   - anything else is released as Text would treat it if the text ended here.
//
// Until an early release, the output is exactly Text's; after one, it may differ from
// Text's but still never contains a credential Text would have removed, except a candidate
// whose recognisable start lies more than the bound before the point where it becomes
// a match (e.g. a JWT with a 16 KiB header).
//
// # How
//
// Text runs its patterns one after the other, each over the previous one's output; a
// Stream chains one stage per pattern. A stage simulates the leftmost-first
// search of package regexp for its pattern (the same compiled program) over its pending
// text, and releases the text up to the last safe cut: one that no match found crosses,
// that no thread still alive started before, and where the assertions (\b, \z) judge
// both sides as they judge the whole. Package regexp then replaces the matches in the
// released text as in Text. Past the cut, a stage also releases, unchanged, the text
// before the earliest position that a replacement could still change (releaseAhead):
// each thread carries, as the regexp carries its captures, where its group 1 ended (a
// replacement "${1}…" writes it unchanged); the cut later leaves that text out. The
// simulation reads each rune once per search, as the regexp does: the work stays linear
// in the text.
//
// The zero value is ready to use. After Flush the Stream starts a new stream
// (Redactions keeps counting). It is not safe for concurrent use.
//
// Text's normalisation (dropping format characters between printable ASCII characters)
// is a formatStage before the pattern stages.
type Stream struct {
	format     formatStage
	stages     []streamStage
	redactions int
	limit      int // held-text bound; 0: MaxHeld (tests lower it)
}

// Write accepts the next chunk of the stream and returns the text that is now safe to
// emit, redacted (possibly empty).
func (r *Stream) Write(chunk string) string {
	r.init()
	if chunk == "" {
		return ""
	}
	out := r.feed(0, r.format.write(chunk))
	limit := r.limit
	if limit <= 0 {
		limit = MaxHeld
	}
	// Each round moves at least half of the largest stage's text on (or drops it); the
	// cap only guards against a bug looping forever.
	for round := 0; r.held() > limit && round < 64*len(r.stages); round++ {
		if r.format.held() > r.held()/2 {
			out += r.feed(0, r.format.force())
			continue
		}
		j := 0
		for i := range r.stages {
			if len(r.stages[i].buf) > len(r.stages[j].buf) {
				j = i
			}
		}
		s, n := r.stages[j].force()
		r.redactions += n
		out += r.feed(j+1, s)
	}
	return out
}

// Flush ends the stream: it returns the held text, redacted, and resets the
// Stream for a new stream.
func (r *Stream) Flush() string {
	r.init()
	in := r.format.flush()
	for i := range r.stages {
		st := &r.stages[i]
		st.append(in)
		s, n := st.flush()
		r.redactions += n
		in = s
	}
	return in
}

// Redactions returns how many credentials were replaced so far.
func (r *Stream) Redactions() int { return r.redactions }

// held returns how many bytes the stages hold back.
func (r *Stream) held() int {
	n := r.format.held()
	for i := range r.stages {
		n += len(r.stages[i].buf)
	}
	return n
}

func (r *Stream) init() {
	if r.stages != nil {
		return
	}
	progs := streamProgs()
	r.stages = make([]streamStage, len(progs))
	for i, sp := range progs {
		r.stages[i].init(sp)
	}
}

// feed passes in through the stages from index from on and returns what the last stage
// releases.
func (r *Stream) feed(from int, in string) string {
	for i := from; i < len(r.stages); i++ {
		st := &r.stages[i]
		if in == "" {
			return ""
		}
		st.append(in)
		st.advance(false)
		if st.swallow {
			return "" // the stage is still dropping a released match
		}
		var out string
		if c := st.cutPoint(); c > 0 {
			var n int
			out, n = st.emit(c)
			r.redactions += n
		}
		if a := st.releaseAhead(); a != "" {
			out += a
		}
		in = out
	}
	return in
}

// streamSelfCheck makes every stage compare the matches its simulation found with those
// of the regexp on the text it releases, and panic on a difference (tests set it).
var streamSelfCheck bool

// posInfo is what a stage knows of a position of its pending text.
type posInfo struct {
	flags uint8
	kept  uint16 // with reach: the least that a match found here keeps (see sqEntry.keep; at most 65,535)
	reach uint32 // the longest match found that starts here (0: none)
}

// Flags of a position.
const (
	fBoundary uint8 = 1 << iota // a rune starts here (or the text ends)
	fEnd                        // an assertion here, judged by a thread started before, depends on the rune here
)

// streamStage runs one of Text's patterns over a stream: the text the previous stage
// released goes in, the same text with this pattern's matches replaced comes out.
//
// It holds buf, the text not released yet, and simulates package regexp's FindAll over
// it (as if buf were a text of its own, which the cut rules make true): a search from
// pos, threads in runq in priority order each with the start of the match it would make,
// a found match [mstart, mend) while threads of higher priority may still extend it.
// Every position gets a posInfo.
type streamStage struct {
	sp           *streamProg
	buf          []byte
	info         []posInfo // len(buf)+1
	known        int       // buf[:known] holds whole runes; the rest is an incomplete one
	pos          int
	runq, nextq  squeue
	scratch      squeue
	fresh        bool // the search's thread for a match starting at pos has been added
	matched      bool
	mstart, mend int
	mkeep        int   // the found match's keep (see sqEntry.keep)
	floor        int   // no cut at or below floor is safe, and none will be
	reachFloor   int   // the furthest end of a match starting at or below floor
	found        []int // self-check: the matches found, start and end pairs

	// Swallow mode: a match was released early (by force) and its rest is being dropped
	// (advance runs only its threads and starts none).
	swallow bool
	emitted int // buf[:emitted] has been released
	dropTo  int // buf[:dropTo] belongs to the released match

	// Released ahead of the cut: buf[:ahead] has gone out unchanged already (see
	// releaseAhead); forced: force ran since the stream began.
	ahead  int
	forced bool
}

func (st *streamStage) init(sp *streamProg) {
	n := len(sp.prog.Inst)
	*st = streamStage{sp: sp, info: make([]posInfo, 1, 16), runq: newSqueue(n), nextq: newSqueue(n), scratch: newSqueue(n)}
}

func (st *streamStage) append(s string) {
	if s == "" {
		return
	}
	st.buf = append(st.buf, s...)
	n := len(st.info)
	st.info = slices.Grow(st.info, len(s))[:n+len(s)]
	clear(st.info[n:])
}

// cutFront removes buf[:c] and info[:c]. After a long cut it copies the rest to arrays of
// its size: the old ones, grown to a long chunk (a turn hands its redactor the text that
// came during a commit), would stay as long as the Stream (a reply), about 12 bytes per
// byte per stage.
func (st *streamStage) cutFront(c int) {
	st.buf, st.info = st.buf[c:], st.info[c:]
	if c >= 64 {
		st.buf = append(make([]byte, 0, len(st.buf)+32), st.buf...)
		st.info = append(make([]posInfo, 0, len(st.info)+32), st.info...)
	}
}

// incompleteTail returns the length of the incomplete UTF-8 character that ends b.
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		if b[i] < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}

// runeAt decodes the rune at i as package regexp's input does.
func runeAt(b []byte, i int) (rune, int) {
	if c := b[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRune(b[i:])
}

// runeBefore returns the rune before i (-1 at 0) as package regexp's context does.
func runeBefore(b []byte, i int) rune {
	if i == 0 {
		return -1
	}
	if c := b[i-1]; c < utf8.RuneSelf {
		return rune(c)
	}
	r, _ := utf8.DecodeLastRune(b[:i])
	return r
}

// advance runs the search over the known text as far as it can without the runes to come
// (with final, to the end of the text). It is the stage's one step loop, in two modes:
//
//   - searching: the search of package regexp, starting a thread at every position where
//     no match is pending and recording the matches it finds;
//   - swallowing (after force released a match early): only the released match's threads
//     run, no thread starts, and the text they cover is dropped as it arrives. When they
//     end, the stage resumes searching after the match, in the same call.
func (st *streamStage) advance(final bool) {
	st.setKnown(final)
	for {
		if !st.runq.hasLive() {
			switch {
			case st.swallow:
				st.endSwallow()
				st.setKnown(final)
				continue
			case st.matched:
				st.finish()
				continue
			}
			st.runq.clear()
			st.skipToStart()
		}
		if st.pos >= st.known {
			if !final || !st.endOfText() {
				return
			}
			continue
		}
		if !st.step(final) {
			return
		}
	}
}

// setKnown sets known: the whole of buf with final, else buf up to the incomplete UTF-8
// character that may end it.
func (st *streamStage) setKnown(final bool) {
	st.known = len(st.buf)
	if !final {
		st.known -= incompleteTail(st.buf)
	}
}

// skipToStart moves pos, while no thread runs, over the known text to where a match can
// start.
func (st *streamStage) skipToStart() {
	sp := st.sp
	for st.pos < st.known {
		c := st.buf[st.pos]
		w := 1
		if c < utf8.RuneSelf {
			if sp.first[c] {
				return
			}
		} else {
			if sp.firstOther {
				return
			}
			_, w = utf8.DecodeRune(st.buf[st.pos:])
		}
		st.info[st.pos].flags |= fBoundary
		st.pos += w
		st.fresh = false
	}
}

// step moves the threads over the rune at pos, in priority order: each consumes it or
// dies, until one waits at a match (first-match mode: the threads after it are cut off).
// Searching, a new thread starts at pos first unless a match is pending; swallowing, the
// text the released match covers is dropped after the step. step reports false, having
// done nothing, when the assertions after the rune need the next rune and it is not known
// yet.
func (st *streamStage) step(final bool) bool {
	sp, pos := st.sp, st.pos
	st.info[pos].flags |= fBoundary
	r, w := runeAt(st.buf, pos)
	if !st.swallow && !st.matched && !st.fresh {
		sp.add(&st.runq, uint32(sp.prog.Start), pos, sp.keepAt(pos), pos, syntax.EmptyOpContext(runeBefore(st.buf, pos), r), 0, nil)
		st.fresh = true
	}
	// Does a thread consume r (before a match cuts the rest off)? Then the assertions
	// after it, if the pattern has any there, need the next rune.
	r1 := rune(-1)
	if sp.lateAssert && sp.consumes(&st.runq, r) {
		switch {
		case pos+w < st.known:
			r1, _ = runeAt(st.buf, pos+w)
		case !final:
			return false
		}
	}
	// eof is the context if the text ended after r: an assertion judged differently
	// under it marks the next position fEnd; swallowing, the threads under it in
	// scratch tell whether the match would end here.
	ctx, eof := syntax.EmptyOpContext(r, r1), syntax.EmptyOpContext(r, -1)
	diff := false
	st.nextq.clear()
	st.scratch.clear()
	for _, e := range st.runq.dense {
		if !e.live {
			continue
		}
		in := &sp.prog.Inst[e.pc]
		if in.Op == syntax.InstMatch {
			st.recordMatch(e.start, e.keep, pos)
			break
		}
		if accepts(in, r) {
			sp.add(&st.nextq, in.Out, e.start, e.keep, pos+w, ctx, eof, &diff)
			if st.swallow {
				sp.add(&st.scratch, in.Out, e.start, e.keep, pos+w, eof, 0, nil)
			}
		}
	}
	if diff {
		st.info[pos+w].flags |= fEnd
	}
	st.runq, st.nextq = st.nextq, st.runq
	st.nextq.clear()
	st.pos = pos + w
	st.fresh = false
	if st.swallow {
		st.dropCovered()
	}
	return true
}

// endOfText ends the search at the end of the text (final): a thread waiting at a match
// instruction matches there. It reports whether the loop goes on: to finish the match
// found, or to end the swallowed one.
func (st *streamStage) endOfText() bool {
	sp := st.sp
	st.info[st.pos].flags |= fBoundary
	if !st.swallow && !st.matched && !st.fresh {
		sp.add(&st.runq, uint32(sp.prog.Start), st.pos, sp.keepAt(st.pos), st.pos, syntax.EmptyOpContext(runeBefore(st.buf, st.pos), -1), 0, nil)
	}
	for _, e := range st.runq.dense {
		if e.live && sp.prog.Inst[e.pc].Op == syntax.InstMatch {
			st.recordMatch(e.start, e.keep, st.pos)
			break
		}
	}
	st.runq.clear()
	st.fresh = false
	return st.swallow || st.matched
}

// recordMatch records that a thread started at start matches at end. Swallowing, only
// the end counts: the match was released already, and start is no position of buf.
func (st *streamStage) recordMatch(start, keep, end int) {
	if keep == inGroup {
		keep = start // cannot happen (group 1 leads, so a match has passed it); safe if it did
	}
	st.matched, st.mend = true, end
	if !st.swallow {
		st.mstart, st.mkeep = start, keep
		st.noteMatch(start, keep, end)
	}
}

// finish ends the search with its match; the next one starts at the match's end.
func (st *streamStage) finish() {
	if streamSelfCheck {
		st.found = append(st.found, st.mstart, st.mend)
	}
	st.pos = st.mend
	st.matched = false
	st.runq.clear()
	st.fresh = false
}

// noteMatch records that the search found a match [start, end) (one that may still be
// extended or superseded: a cut inside it is unsafe either way).
func (st *streamStage) noteMatch(start, keep, end int) {
	if start < 0 {
		if streamSelfCheck {
			panic(fmt.Sprintf("redact: stream stage %q: match from before the cut", st.sp.red.re))
		}
		start = 0
	}
	// A keeping match has passed group 1 (keep is set); the clamp only guards.
	k := uint16(min(max(keep-start, 0), end-start, 1<<16-1)) // less is safe: it holds more
	in := &st.info[start]
	if in.reach == 0 || k < in.kept {
		in.kept = k
	}
	if n := uint32(min(end-start, 1<<32-1)); n > in.reach {
		in.reach = n
	}
	if start <= st.floor {
		st.reachFloor = max(st.reachFloor, end)
	}
}

// frontier describes the threads waiting at pos for the rune there: alive is the
// earliest start of those that consume it (len(buf)+1: none), and pending the start of
// a match that ends at pos and that the step over pos will record (-1: none).
func (st *streamStage) frontier() (alive, pending int) {
	alive, pending = len(st.buf)+1, -1
	if st.pos >= st.known {
		// The rune at pos is not known yet: every live thread may consume it.
		for _, e := range st.runq.dense {
			if !e.live {
				continue
			}
			if st.sp.prog.Inst[e.pc].Op == syntax.InstMatch {
				return alive, e.start
			}
			alive = min(alive, e.start)
		}
		return alive, pending
	}
	r, _ := runeAt(st.buf, st.pos)
	for _, e := range st.runq.dense {
		if !e.live {
			continue
		}
		in := &st.sp.prog.Inst[e.pc]
		if in.Op == syntax.InstMatch {
			return alive, e.start
		}
		if accepts(in, r) {
			alive = min(alive, e.start)
		}
	}
	return alive, pending
}

// freshSameAt is freshSame for a cut at c; next tells whether the rune at c is known.
func (st *streamStage) freshSameAt(c int, next bool) bool {
	prev := runeBefore(st.buf, c)
	class := 2
	switch {
	case prev == '\n':
		class = 0
	case syntax.IsWordChar(prev):
		class = 1
	}
	if !next {
		return st.sp.fresh[class][utf8.RuneSelf]
	}
	r, _ := runeAt(st.buf, c)
	if r < utf8.RuneSelf {
		return st.sp.fresh[class][r]
	}
	return st.sp.freshSameCompute(&st.scratch, prev, r, false)
}

// cutPoint returns the largest c such that buf[:c] can be released: whatever follows,
// the search over buf gives the matches of the search over buf[:c] and then those of the
// search over the rest on its own. That holds when
//
//   - no match found crosses c and no thread started before c is still alive (a thread
//     that died without a match changed nothing: threads do not interact but through
//     their matches);
//   - the assertions at c judge the threads started before c as the end of a text would
//     (no fEnd), so the search over buf[:c] finds the same matches;
//   - a search started at c behaves as one started at the beginning of a text
//     (freshSame), so the search over the rest finds the same matches.
//
// All three only become false as the text grows, but for the threads alive at pos: the
// positions up to floor are settled.
func (st *streamStage) cutPoint() int {
	if st.pos >= st.known && !st.runq.hasLive() {
		// Every thread has ended: the cut at the end depends only on what comes next.
		if st.pos > 0 && st.freshSameAt(st.pos, false) {
			return st.pos
		}
	}
	alive, pending := st.frontier()
	top := min(st.pos, alive)
	if st.pos >= st.known {
		top = min(top, st.pos-1)
	}
	best := 0
	settled := true
	floor := st.floor
	reach := st.reachFloor // the furthest end of a match starting before c
	for c := floor + 1; c <= top; c++ {
		if a := c - 1; a > floor {
			reach = max(reach, a+int(st.info[a].reach))
		}
		if pending >= 0 && pending < c {
			reach = max(reach, st.pos)
		}
		f := st.info[c].flags
		if f&fBoundary != 0 && f&fEnd == 0 && reach <= c && st.freshSameAt(c, true) {
			best = c
			settled = false
		} else if settled {
			st.floor = c
			st.reachFloor = max(reach, c+int(st.info[c].reach))
		}
	}
	return best
}

// emit releases buf[:c] (c from cutPoint) with the matches replaced.
func (st *streamStage) emit(c int) (string, int) {
	seg := string(st.buf[:c])
	out, n, idx := st.sp.red.run(seg)
	atPos := c == st.pos
	if streamSelfCheck {
		st.check(seg, idx, c, atPos)
	}
	out = st.trimAhead(out, seg)
	st.ahead = max(st.ahead-c, 0)
	st.cutFront(c)
	st.known -= c
	st.pos -= c
	st.floor = 0
	st.reachFloor = int(st.info[0].reach)
	if atPos {
		// Threads started before c wait at c without consuming its rune (a match there
		// is in seg); the search after the cut starts afresh.
		st.runq.clear()
		st.fresh = false
		st.matched = false
	} else {
		// Threads started before c wait at pos without consuming its rune: they die at
		// the next step.
		for i := range st.runq.dense {
			st.runq.dense[i].start -= c
			if st.runq.dense[i].keep != inGroup {
				st.runq.dense[i].keep -= c
			}
		}
		st.mstart -= c
		st.mkeep -= c
		st.mend -= c
	}
	return out, n
}

// check compares the matches the simulation found left of c with those the regexp finds
// in seg (self-check).
func (st *streamStage) check(seg string, idx [][]int, c int, atPos bool) {
	var got []int
	k := 0
	for ; k+1 < len(st.found) && st.found[k+1] <= c; k += 2 {
		got = append(got, st.found[k], st.found[k+1])
	}
	for i := k; i < len(st.found); i++ {
		st.found[i] -= c
	}
	st.found = append(st.found[:0], st.found[k:]...)
	for i := 0; i < len(st.found); i += 2 {
		if st.found[i] < 0 {
			panic(fmt.Sprintf("redact: stream stage %q: match %v crosses the cut %d", st.sp.red.re, st.found[i:i+2], c))
		}
	}
	alive, pending := st.frontier()
	switch {
	case atPos && pending >= 0:
		got = append(got, pending, c)
	case !atPos && (alive < c || pending >= 0 && pending < c):
		panic(fmt.Sprintf("redact: stream stage %q: thread from %d alive at the cut %d", st.sp.red.re, min(alive, pending), c))
	case !atPos && st.matched && st.mstart < c:
		panic(fmt.Sprintf("redact: stream stage %q: match from %d pending at the cut %d", st.sp.red.re, st.mstart, c))
	}
	want := make([]int, 0, 2*len(idx))
	for _, m := range idx {
		want = append(want, m[0], m[1])
	}
	if !slices.Equal(got, want) {
		panic(fmt.Sprintf("redact: stream stage %q: simulated matches %v, regexp %v in %q", st.sp.red.re, got, want, seg))
	}
}

// flush releases all of buf (the stream ends) and resets the stage.
func (st *streamStage) flush() (string, int) {
	if st.swallow || streamSelfCheck {
		st.advance(true) // ends a swallowed match; with the self-check, searches all
	}
	seg := string(st.buf)
	out, n, idx := st.sp.red.run(seg)
	if streamSelfCheck {
		st.pos = len(st.buf)
		st.check(seg, idx, len(st.buf), true)
	}
	out = st.trimAhead(out, seg)
	st.buf = st.buf[:0]
	st.ahead, st.forced = 0, false
	st.resetSearch()
	return out, n
}

// resetSearch starts a new search at the beginning of buf.
func (st *streamStage) resetSearch() {
	st.info = st.info[:len(st.buf)+1]
	clear(st.info)
	st.known = 0
	st.pos = 0
	st.runq.clear()
	st.nextq.clear()
	st.fresh = false
	st.matched = false
	st.floor = 0
	st.reachFloor = 0
	st.found = st.found[:0]
	st.swallow = false
}

// drop removes buf[:c] and starts a new search.
func (st *streamStage) drop(c int) {
	st.ahead = max(st.ahead-c, 0)
	st.cutFront(c)
	st.resetSearch()
}

// force releases held text early because the held text exceeds the bound (see
// Stream): up to the largest safe cut when that releases at least half of buf, else what
// the text up to here gives (releaseCandidate).
func (st *streamStage) force() (string, int) {
	st.forced = true
	if st.swallow {
		st.endSwallow()
	}
	st.advance(false)
	n := len(st.buf)
	if c := st.crossFreeCut(); c > 0 && n-c <= n/2 {
		seg := string(st.buf[:c])
		out, k, _ := st.sp.red.run(seg)
		out = st.trimAhead(out, seg)
		st.drop(c)
		return out, k
	}
	return st.releaseCandidate()
}

// crossFreeCut returns the largest cut no match or candidate crosses (assertions at the
// cut aside), 0 if none.
func (st *streamStage) crossFreeCut() int {
	if st.pos >= st.known && !st.runq.hasLive() {
		return st.pos
	}
	c := 0
	alive, pending := st.frontier()
	reach := 0
	for x := 1; x <= min(st.pos, alive); x++ {
		reach = max(reach, x-1+int(st.info[x-1].reach))
		if pending >= 0 && pending < x {
			reach = max(reach, st.pos)
		}
		if st.info[x].flags&fBoundary != 0 && reach <= x {
			c = x
		}
	}
	return c
}

// releaseCandidate is force when a candidate holds most of buf: it releases what the
// known text gives if the text ended here, and if the oldest candidate is a match there,
// swallows the rest of that match as it arrives.
func (st *streamStage) releaseCandidate() (string, int) {
	a := -1
	for _, e := range st.runq.dense {
		if e.live && (a < 0 || e.start < a) {
			a = e.start
		}
	}
	if st.matched && (a < 0 || st.mstart < a) {
		a = st.mstart
	}
	L := st.known
	seg := string(st.buf[:L])
	out, k, idx := st.sp.red.run(seg)
	out = st.trimAhead(out, seg)
	whole := false
	for _, m := range idx {
		if a >= 0 && m[0] == a && m[1] == L {
			whole = true
		}
	}
	if !whole || st.pos >= L && !st.runq.hasLive() {
		st.drop(L)
		return out, k
	}
	st.startSwallow(a, L)
	return out, k
}

// startSwallow enters swallow mode after buf[:released] was released with the match
// started at a (a candidate still alive at pos < released): it keeps only that match's
// threads, which wait at pos for the rune there, and drops the text before pos.
func (st *streamStage) startSwallow(a, released int) {
	st.runq.keep(func(e sqEntry) bool { return e.live && e.start == a })
	st.matched = st.matched && st.mstart == a
	p := st.pos
	st.buf = st.buf[p:]
	st.info = st.info[p:]
	clear(st.info)
	st.known -= p
	st.pos = 0
	st.mend -= p
	st.emitted = released - p
	st.dropTo = 0
	st.ahead = 0 // released covers it
	st.swallow = true
	st.found = st.found[:0]
}

// dropCovered drops, swallowing, the text the released match covers so far: up to pos
// when the match would end there if the text did (a thread in scratch waits at a match),
// and up to the end of a match found.
func (st *streamStage) dropCovered() {
	for _, e := range st.scratch.dense {
		if e.live && st.sp.prog.Inst[e.pc].Op == syntax.InstMatch {
			st.dropTo = st.pos
			break
		}
	}
	if st.matched && st.mend > st.dropTo {
		st.dropTo = st.mend
	}
	if d := min(st.dropTo, st.pos); d > 0 {
		st.buf = st.buf[d:]
		st.info = st.info[d:]
		st.known -= d
		st.pos -= d
		st.emitted -= d
		st.dropTo -= d
		st.mend -= d
	}
}

// endSwallow ends swallow mode: the stage resumes after the released match.
func (st *streamStage) endSwallow() {
	resume := max(st.emitted, st.dropTo, 0)
	if st.matched && st.mend > resume {
		resume = st.mend
	}
	st.drop(min(resume, len(st.buf)))
}

// releaseAhead releases, unchanged, the text after the cut that no match can change
// (buf[ahead:aheadLimit()]) and records it as gone: the emit of a later cut leaves it
// out (trimAhead). Such text is released before it can be cut because a cut needs more
// than that no match changes the text before it: also that no thread started before it
// is alive (a URL's scheme is matched, though kept) and that the search after it could
// start afresh (not inside a word, for \b).
func (st *streamStage) releaseAhead() string {
	if st.swallow {
		return ""
	}
	h := st.aheadLimit()
	if h <= st.ahead {
		return ""
	}
	s := string(st.buf[st.ahead:h])
	st.ahead = h
	return s
}

// aheadLimit returns the earliest position of buf that may yet be inside the part of a
// match that its replacement changes, whatever text comes: the output of this stage up
// to there is buf's text. It is the least of
//
//   - pos: threads yet to start start there or later (after a pending match, at its end);
//   - each live thread's keep (the end of group 1 it kept, or its start when the whole
//     match is replaced; a thread still inside group 1 changes nothing before pos);
//   - the keep of every match found and not yet cut off (a pending one too).
//
// The match the search ends with for each start descends from a thread alive now (or
// starts at pos or later), so its changed part begins no earlier; package regexp keeps
// the same threads (the first to reach an instruction), so its group 1 is the thread's.
func (st *streamStage) aheadLimit() int {
	h := st.pos
	for _, e := range st.runq.dense {
		if e.live && e.keep != inGroup {
			h = min(h, e.keep)
		}
	}
	if st.matched {
		h = min(h, st.mkeep)
	}
	for x := st.ahead; x < h; x++ {
		if in := st.info[x]; in.reach > 0 {
			h = min(h, x+int(in.kept))
		}
	}
	return h
}

// trimAhead returns out, the redaction of seg = buf[:len(seg)], without the text
// released ahead (buf[:ahead]), which begins it unless a forced release (force) changed
// how the search sees the text; then, the output already released stays as it is and
// the rest of seg is redacted on its own.
func (st *streamStage) trimAhead(out, seg string) string {
	a := min(st.ahead, len(seg))
	if a == 0 {
		return out
	}
	if len(out) >= a && out[:a] == seg[:a] {
		return out[a:]
	}
	if streamSelfCheck && !st.forced {
		panic(fmt.Sprintf("redact: stream stage %q: %q released ahead, but the redaction of %q is %q", st.sp.red.re, seg[:a], seg, out))
	}
	rest, _, _ := st.sp.red.run(seg[a:])
	return rest
}

// run applies r to s as Text's pass does and also returns the matches.
func (r *redactor) run(s string) (string, int, [][]int) {
	if !r.mayMatch(s) {
		return s, 0, nil
	}
	idx := r.re.FindAllStringSubmatchIndex(s, -1)
	out, n := r.expand(s, idx)
	return out, n, idx
}
