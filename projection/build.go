package projection

import (
	"math"
	"slices"
	"strconv"
)

// Stats describes one projection. Section sizes are in bytes as budgets count them and in
// tokens by [EstimateTokens] of those bytes: the system section is len(System); a message
// counts len(Content) + len(ToolCallID) + 32, plus, per tool call, len(ID) + len(Name) +
// len(Arguments) + 48 (the constants cover the labels and tags renderings add).
type Stats struct {
	SystemBytes, SystemTokens   int
	HistoryBytes, HistoryTokens int // the history messages, drop marker included
	CurrentBytes, CurrentTokens int

	// HistoryMessages is the number of history messages, drop marker included.
	HistoryMessages int
	// Compacting reports that in-place compaction (P-3) is on for this conversation.
	Compacting bool
	// Replaced is the number of history messages shown in compacted form.
	Replaced int
	// Truncated is the number of messages (history and current) cut to their cap.
	Truncated int
	// Dropped is the number of history items before the first one shown (of every kind:
	// Build does not read further back than it needs, so like the drop marker it counts
	// entries, not messages), plus tool results left out because their call is not shown.
	Dropped int
	// OmittedBefore is the Seq of the first history item shown after a drop (the marker
	// says that everything before it is omitted); 0 when nothing was dropped.
	OmittedBefore uint64
	// Redactions is the number of credentials replaced in messages.
	Redactions int
	// MemoryBytes is the cost of the memory section (0: none shown), counted in
	// HistoryBytes; MemoryFacts the number of facts it shows.
	MemoryBytes, MemoryFacts int
}

// minDropBlock is the smallest drop block, in seq units.
const minDropBlock = 4

// Build projects a conversation for one turn (DESIGN P-1..P-4): history is the
// conversation's ledger entries before the current message, oldest first (all of them or
// only the newest; at least the newest 2*HistoryLimit projectable ones), and current is
// the message the agent is to act on. The result is the instruction stack as System and
// the history messages followed by the current message, each with its trust tag.
//
// Allowlist: only MODEL_VISIBLE items of the kinds KindUserMessage, KindAgentReply,
// KindToolCall and KindToolResult are projected; status, error, audit and chunk entries
// never are, nor are empty messages.
//
// Content: every text (history and current) goes through history.Filter, then trust-tag
// imitations are neutralised and credentials redacted ([redact.Text]); the content is a fixed
// point of history.Filter. History messages are capped at Policy.MaxMessageBytes, the
// current one at Budget.Current, with a marker naming the original size and artifact.
// Consecutive tool calls become one assistant message; a tool call whose result is not in
// the window (or whose id is empty) is replaced by a note and its stray result left out,
// and a call whose id an earlier call used is shown with its own result under a new id of
// the same length, so every request Build returns passes [Request.Validate].
//
// Budget (P-3): Build walks history from the newest item backwards and reads no more
// than the HistoryLimit and history budget need, so its cost does not grow with the
// length of the conversation. Two rules keep the request prefix byte-stable from turn to
// turn, so providers' prompt caches keep hitting:
//
//  1. Compaction. Once the history no longer fits the budget in full, compaction is on,
//     and it stays on for the rest of the conversation (it is on whenever anything has
//     been dropped). While it is on, every tool result larger than 512 bytes (its Size,
//     or the length of its text) is replaced in place by "[result of tool NAME omitted
//     to save context: N bytes; artifact REF]", every other text longer than 1,024
//     bytes (or MaxMessageBytes, if smaller) is cut to that length with a marker naming
//     its size and artifact, and tool-call arguments longer than 256 bytes are replaced.
//     The rule looks only at the message itself, never at the total, so a message is
//     replaced the first time it appears in a request and identically in every later
//     one; message count, roles and order do not change. The one request where
//     compaction switches on changes the prefix from the first large message on.
//  2. Drops. If the history is still over the budget or over HistoryLimit messages, the
//     oldest messages are dropped and one marker message (role user, trust SYSTEM) says
//     that the ledger entries before seq S are omitted. The cut is rounded up to a
//     multiple of a block of max(4, HistoryLimit/2) seqs (halved while rounding would
//     keep fewer than a quarter of the messages that fit; with at least one seq per
//     message, a window bound by HistoryLimit keeps about half), so the first message
//     and the marker stay the same for many turns and change in one step. The window
//     starts at a user message (a turn), or, when not even the newest turn fits, at any
//     message but a tool result.
//
// Build is deterministic (P-4): the same items and policy give the same request, byte
// for byte in every mapping. It returns an error wrapping [ErrInvalid] if current is not
// a MODEL_VISIBLE KindUserMessage item, if a budget is negative, or if the history items
// it reads are not in strictly increasing Seq order; and one wrapping [ErrOverBudget] if
// the instruction stack does not fit Budget.System.
func Build(history []Item, current Item, p Policy) (Request, Stats, error) {
	return BuildWithMemory(history, current, nil, p)
}

// BuildWithMemory is [Build] with the memory of the dropped turns (issue #38): when
// Policy.Memory is set and the history drops turns, the window is chosen with the memory
// section's budget (Budget.Memory) set aside, whether mem is nil or not, so that the
// window, and the drop boundary Stats.OmittedBefore, do not depend on the memory; mem, if
// not nil, is then shown as one message (role user, trust MODEL_GENERATED) before the drop
// marker: the facts under a reference-only header, each with its evidence ids, within
// Budget.Memory (the newest facts that fit). Without a drop nothing is shown.
func BuildWithMemory(history []Item, current Item, mem *Memory, p Policy) (Request, Stats, error) {
	pl, err := NewPlan(history, current, p)
	if err != nil {
		return Request{}, Stats{}, err
	}
	req, st := pl.Request(mem)
	return req, st, nil
}

// Plan is a projection decided but not yet rendered: the window over the history and so
// the drop boundary, which do not depend on the memory shown ([BuildWithMemory]). A caller
// that needs the boundary to choose the memory (the snapshot covering the entries before
// it) makes the Plan once and renders it with that memory, instead of building twice.
type Plan struct {
	cfg    config
	system string
	ps     []piece
	w      window
	cur    Message
	st     Stats // without the history's messages (Request counts them)
	// complete: the plan used every history item it was given, so older items, had they
	// been given, might have been shown (see NeedsOlder).
	complete bool
	// stop is the index of the history item at which the plan stopped reading (-1:
	// complete); histLen the number of history items it was given.
	stop, histLen int
	memo          *Memo // nil: none (NewPlanMemo)
}

// NewPlan decides the projection of [BuildWithMemory] (same arguments but the memory, same
// errors).
func NewPlan(history []Item, current Item, p Policy) (*Plan, error) {
	cfg, err := p.resolve()
	if err != nil {
		return nil, err
	}
	return newPlan(history, current, cfg, nil)
}

// newPlan is NewPlan with the policy resolved, the items' forms taken from m (nil: none).
func newPlan(history []Item, current Item, cfg config, m *Memo) (*Plan, error) {
	var system string
	var err error
	if m != nil {
		system, err = m.systemText(cfg)
	} else {
		system, err = systemText(cfg)
	}
	if err != nil {
		return nil, err
	}
	if current.Kind != KindUserMessage || current.Visibility != VisibilityModel {
		return nil, invalid("current item: kind %q, visibility %q, want %s %s",
			current.Kind, current.Visibility, KindUserMessage, VisibilityModel)
	}
	pl := &Plan{cfg: cfg, system: system, memo: m, stop: len(history), histLen: len(history)}
	if cfg.limit > 0 {
		ps, stop, err := collectPieces(history, cfg, m)
		if err != nil {
			return nil, err
		}
		complete := stop < 0
		pl.ps, pl.w, pl.complete, pl.stop = ps, chooseWindow(ps, complete, len(history), cfg, &pl.st), complete, stop
	}
	pl.cur = currentMessage(&current, cfg, &pl.st)
	return pl, nil
}

// NeedsOlder reports whether the plan used every history item it was given (the limit
// and the budget were not reached): given older items too, it could show more. A caller
// that reads the history newest first can read a few items, plan, and read more only when
// this is true; once it is false, older items change nothing in the request.
func (pl *Plan) NeedsOlder() bool { return pl.complete }

// NeedsOlderWithin reports whether the plan of only the newest n of the history items
// this plan was given (same current item, same policy) would need older ones
// ([Plan.NeedsOlder]): whether this plan read past those n without stopping. A caller
// that reads the history in steps can plan once with what it expects to need and check
// that the steps before would have gone on to read it.
func (pl *Plan) NeedsOlderWithin(n int) bool { return pl.stop < pl.histLen-n }

// Boundary is the drop boundary: the seq of the first history item shown after a drop
// (Stats.OmittedBefore of the request, whatever its memory); 0 when nothing is dropped.
func (pl *Plan) Boundary() uint64 {
	if pl.w.firstSeq > 0 && pl.cfg.historyBytes-pl.cfg.memoryBytes >= markerCost {
		return pl.w.firstSeq
	}
	return 0
}

// Request renders the plan with mem (nil: none) as [BuildWithMemory] does. It may be
// called more than once; the plan is not changed.
func (pl *Plan) Request(mem *Memory) (Request, Stats) {
	st := pl.st
	var msgs []Message
	if pl.cfg.limit > 0 {
		msgs = historyMessages(pl.ps, pl.w, pl.cfg.historyBytes-pl.cfg.memoryBytes, &st)
		if pl.w.firstSeq > 0 && mem != nil && pl.cfg.memoryBytes > 0 {
			if m, ok := pl.memoryMessage(mem, &st); ok {
				msgs = append([]Message{m}, msgs...)
			}
		}
		var orphans int
		msgs, orphans = pairTools(msgs)
		st.Dropped += orphans
	}
	st.SystemBytes, st.SystemTokens = len(pl.system), EstimateTokens(pl.system)
	st.HistoryMessages = len(msgs)
	for i := range msgs {
		st.HistoryBytes += cost(&msgs[i])
	}
	st.HistoryTokens = tokensOf(st.HistoryBytes)
	st.CurrentBytes = cost(&pl.cur)
	st.CurrentTokens = tokensOf(st.CurrentBytes)
	return Request{System: pl.system, Messages: append(msgs, pl.cur)}, st
}

// memoryMessage is memoryMessage(mem, the memory section's room, st), through the memo.
func (pl *Plan) memoryMessage(mem *Memory, st *Stats) (Message, bool) {
	if pl.memo != nil {
		return pl.memo.memory(mem, pl.cfg.memoryBytes, st)
	}
	return memoryMessage(mem, pl.cfg.memoryBytes, st)
}

// allowed reports whether an item may be projected at all (the allowlist).
func allowed(it *Item) bool {
	if it.Visibility != VisibilityModel {
		return false
	}
	switch it.Kind {
	case KindUserMessage, KindAgentReply, KindToolCall, KindToolResult:
		return true
	}
	return false
}

// normTrust maps empty and unknown trust values to PEER_UNTRUSTED.
func normTrust(t Trust) Trust {
	switch t {
	case TrustPeerUntrusted, TrustOperator, TrustAgent, TrustSystem, TrustModel:
		return t
	}
	return TrustPeerUntrusted
}

// currentMessage projects the current item: cleaned, capped at the current budget.
func currentMessage(it *Item, cfg config, st *Stats) Message {
	limit := cfg.currentBytes - msgOverhead
	total, ref := itemSize(it), sanitizeRef(it.ArtifactRef)
	var content string
	if it.Text == "" && ref != "" {
		content = notInlined(total, ref)
	} else {
		var n int
		content, n = clean(it.Text, limit)
		st.Redactions += n
		var cut bool
		if content, cut = fit(content, limit, total, ref); cut {
			st.Truncated++
		}
	}
	if content == "" {
		content = "[empty message]"
	}
	return Message{Role: RoleUser, Content: content, Trust: normTrust(it.Trust)}
}

func itemSize(it *Item) int64 {
	if it.Size > 0 {
		return it.Size
	}
	return int64(len(it.Text))
}

// resultReplaceBytes: once compaction is on, tool results larger than this (by their
// recorded size) are replaced by a placeholder.
const resultReplaceBytes = 512

// piece is one projectable history item in its two forms. The compact form is made
// first; the full form only when it may be shown (nothing was dropped), so a tool result
// that compaction replaces is never cleaned.
type piece struct {
	it          *Item
	idx         int // index in the history slice
	seq         uint64
	kind        string
	compact     form
	full        *form // nil until fullForm
	replaced    bool  // the compaction rule changed this message
	cleaned     *cleanText
	maxMessage  int
	compactSize int
}

// form is a message with its cost and what cleaning did to it.
type form struct {
	m          Message
	cost       int
	redactions int
	cut        bool // the text was cut to its cap
	argsCut    bool // the tool-call arguments were replaced for their length
}

// cleanText memoises clean for an item's text.
type cleanText struct {
	s string
	n int
}

// makePiece projects one allowed history item in its compact form; ok is false for an
// empty message. The rule (see Build): a tool result over resultReplaceBytes becomes a
// placeholder; any other text is cut to compactBytes (or MaxMessageBytes, if smaller);
// tool-call arguments over compactArgsBytes are replaced.
func makePiece(it *Item, cfg config) (pc piece, ok bool) {
	pc = piece{it: it, seq: it.Seq, kind: it.Kind, maxMessage: cfg.maxMessageBytes}
	pc.compactSize = min(compactBytes, cfg.maxMessageBytes)
	if len(it.Text) <= pc.compactSize+precutMargin && !(it.Kind == KindToolResult && itemSize(it) > resultReplaceBytes) {
		// Short enough that clean does not precut it for either cap: clean once.
		c, n := clean(it.Text, pc.compactSize)
		pc.cleaned = &cleanText{s: c, n: n}
	}
	if it.Kind == KindToolResult && itemSize(it) > resultReplaceBytes {
		name := ""
		if it.ToolName != "" {
			name = sanitizeName(it.ToolName)
		}
		m := Message{Role: RoleTool, Trust: normTrust(it.Trust), ToolCallID: sanitizeID(it.ToolCallID),
			Content: resultPlaceholder(name, itemSize(it), sanitizeRef(it.ArtifactRef))}
		pc.compact = form{m: m, cost: cost(&m)}
		pc.replaced = true
		return pc, true
	}
	pc.compact = project(it, pc.compactSize, compactArgsBytes, pc.cleaned)
	if pc.compact.m.Content == "" && len(pc.compact.m.ToolCalls) == 0 {
		return piece{}, false
	}
	if pc.compact.cut && pc.compactSize < pc.maxMessage {
		pc.replaced = true
	}
	if pc.compact.argsCut && compactArgsBytes < pc.maxMessage {
		pc.replaced = true
	}
	return pc, true
}

// fullForm returns the piece's full form, making it on first use.
func (pc *piece) fullForm() *form {
	if pc.full == nil {
		f := project(pc.it, pc.maxMessage, pc.maxMessage, pc.cleaned)
		pc.full = &f
	}
	return pc.full
}

// project makes the message of an allowed history item with its text cut to limit and
// its tool-call arguments to argsLimit. cleaned, if not nil, is the item's text already
// cleaned.
func project(it *Item, limit, argsLimit int, cleaned *cleanText) form {
	var f form
	total, ref := itemSize(it), sanitizeRef(it.ArtifactRef)
	note := ""
	if it.Kind == KindAgentReply && it.Partial {
		note = partialNote
	}
	var content string
	if it.Text == "" && ref != "" {
		content = notInlined(total, ref)
	} else {
		if cleaned != nil {
			content, f.redactions = cleaned.s, cleaned.n
		} else {
			content, f.redactions = clean(it.Text, limit)
		}
		content, f.cut = fit(content, limit-len(note), total, ref)
		if content != "" {
			content += note
		}
	}
	m := Message{Content: content, Trust: normTrust(it.Trust)}
	switch it.Kind {
	case KindUserMessage:
		m.Role = RoleUser
	case KindAgentReply:
		m.Role = RoleAssistant
	case KindToolCall:
		m.Role = RoleAssistant
		args, n, cut := cleanArgs(it.ToolArgs, argsLimit)
		f.redactions += n
		f.argsCut = cut
		m.ToolCalls = []ToolCall{{ID: sanitizeID(it.ToolCallID), Name: sanitizeName(it.ToolName), Arguments: args}}
	case KindToolResult:
		m.Role = RoleTool
		m.ToolCallID = sanitizeID(it.ToolCallID)
		if m.Content == "" {
			m.Content = "[empty tool result]"
		}
	}
	f.m = m
	f.cost = cost(&m)
	return f
}

// markerText is the content of the drop marker.
func markerText(firstSeq uint64) string {
	return "[Earlier part of this conversation omitted to fit the context budget: the ledger entries before #" +
		thousands(int64(min(firstSeq, math.MaxInt64))) + " are not shown.]"
}

// markerCost is the most a drop marker can count for.
var markerCost = msgOverhead + len(markerText(math.MaxInt64))

// collectPieces walks hist from the newest item back and makes the pieces (newest first)
// of the allowed items until the limit or the compacted budget is reached, at the item
// stop (-1: it reached the oldest item instead: complete). It fails when the seqs do not
// increase. The pieces come from m when it holds them (nil: none).
func collectPieces(hist []Item, cfg config, m *Memo) (ps []piece, stop int, err error) {
	var compactSum int
	var newer uint64
	ps = make([]piece, 0, min(len(hist), cfg.limit, 64)) // a window rarely shows more; append grows it
	for i := len(hist) - 1; i >= 0; i-- {
		it := &hist[i]
		if i < len(hist)-1 && it.Seq >= newer {
			return nil, 0, invalid("history item %d: seq %d not below the next item's seq %d", i, it.Seq, newer)
		}
		newer = it.Seq
		if !allowed(it) {
			continue
		}
		var pc piece
		var ok bool
		if m != nil {
			pc, ok = m.piece(it, cfg)
		} else {
			pc, ok = makePiece(it, cfg)
		}
		if !ok {
			continue
		}
		pc.idx = i
		if len(ps) == cfg.limit {
			return ps, i, nil
		}
		ps = append(ps, pc)
		compactSum += pc.compact.cost
		if compactSum > cfg.historyBytes {
			return ps, i, nil
		}
	}
	return ps, -1, nil
}

// window is which pieces a request shows: ps[:keep] (newest first), in their compact
// forms when compacting, after a drop marker naming firstSeq when firstSeq > 0.
type window struct {
	keep       int
	compacting bool
	firstSeq   uint64
}

// chooseWindow decides the window over ps (see Build): everything, compacted only if the
// full forms do not fit, when nothing was dropped (complete); else the aligned window that
// fits beside the drop marker, always compacted. It counts the dropped items in st.
func chooseWindow(ps []piece, complete bool, histLen int, cfg config, st *Stats) window {
	budget := cfg.historyBytes
	if complete {
		// Nothing dropped: compaction is on only if the full forms do not fit.
		fullSum := 0
		for j := 0; j < len(ps) && fullSum <= budget; j++ {
			fullSum += ps[j].fullForm().cost
		}
		return window{keep: len(ps), compacting: fullSum > budget}
	}
	block, maxItems := max(minDropBlock, cfg.limit/2), cfg.limit-1 // room for the marker
	if cfg.memoryBytes > 0 {
		block, maxItems = memoryDropBlock, maxItems-1 // and for the memory section
	}
	w := window{keep: dropWindow(ps, maxItems, budget-markerCost-cfg.memoryBytes, block), compacting: true}
	switch {
	case w.keep > 0:
		w.firstSeq = ps[w.keep-1].seq
	case len(ps) > 0:
		w.firstSeq = ps[0].seq + 1
	default:
		w.firstSeq = 1
	}
	// Everything before the first item shown: Build did not read the older part, so
	// this counts items of every kind, as the marker counts ledger entries.
	st.Dropped = histLen
	if w.keep > 0 {
		st.Dropped = ps[w.keep-1].idx
	}
	return w
}

// historyMessages renders the window's pieces oldest first, after the drop marker when
// one is due and fits the budget, with consecutive tool calls merged into one assistant
// message, and counts what compaction did in st.
func historyMessages(ps []piece, w window, budget int, st *Stats) []Message {
	msgs := make([]Message, 0, w.keep+1)
	if w.firstSeq > 0 && budget >= markerCost {
		msgs = append(msgs, Message{Role: RoleUser, Content: markerText(w.firstSeq), Trust: TrustSystem})
		st.OmittedBefore = w.firstSeq
	}
	for j := w.keep - 1; j >= 0; j-- {
		pc := &ps[j]
		f := &pc.compact
		if !w.compacting {
			f = pc.fullForm()
		} else if pc.replaced {
			st.Replaced++
		}
		if f.cut && !pc.replaced {
			st.Truncated++
		}
		st.Redactions += f.redactions
		m := f.m
		// Consecutive tool calls are one assistant message.
		if pc.kind == KindToolCall && j < w.keep-1 && ps[j+1].kind == KindToolCall {
			last := &msgs[len(msgs)-1]
			last.Content = joinNonEmpty(last.Content, m.Content)
			last.ToolCalls = append(last.ToolCalls, m.ToolCalls...)
			if last.Trust != m.Trust {
				last.Trust = TrustPeerUntrusted
			}
			continue
		}
		msgs = append(msgs, m)
	}
	st.Compacting = w.compacting
	return msgs
}

// dropWindow returns how many of ps (newest first) to keep after a drop: at most
// maxItems items whose compacted cost is at most maxBytes, starting (oldest first) at a
// turn, that is a user message (or, when not even the newest turn fits, at any message
// but a tool result), with the cut rounded up to a block of seqs (see Build).
func dropWindow(ps []piece, maxItems, maxBytes, block int) int {
	if keep := alignedWindow(ps, maxItems, maxBytes, block, func(k string) bool { return k == KindUserMessage }); keep > 0 {
		return keep
	}
	return alignedWindow(ps, maxItems, maxBytes, block, func(k string) bool { return k != KindToolResult })
}

// memoryDropBlock asks alignedWindow for the memory section's block: with the memory on,
// the block is the largest of 4, 6, 8, 12, 16, 24, … (powers of two and their halfway
// points) not over three quarters of the seqs the natural window spans, whatever the rounding would keep at this turn, so
// the block does not change from turn to turn with the rounding and the window keeps at
// least about a quarter of what fits; the boundary (and the memory section with it) moves
// once per block, its prefix stable in between.
const memoryDropBlock = -1

// alignedWindow is dropWindow with the kinds a window may start at given by cut.
func alignedWindow(ps []piece, maxItems, maxBytes, block int, cut func(kind string) bool) int {
	natural := -1 // index of the oldest message the natural cut keeps
	sum := 0
	for j := range ps {
		if j+1 > maxItems {
			break
		}
		if sum += ps[j].compact.cost; sum > maxBytes {
			break
		}
		if cut(ps[j].kind) {
			natural = j
		}
	}
	if natural < 0 {
		return 0
	}
	if block == memoryDropBlock {
		return memoryAligned(ps, natural, cut)
	}
	for b := uint64(block); b > 1; b /= 2 {
		c := (ps[natural].seq + b - 1) / b * b // the cut, rounded up to the block
		for j := natural; j >= 0; j-- {
			if ps[j].seq >= c && cut(ps[j].kind) {
				if j+1 >= (natural+4)/4 {
					return j + 1
				}
				break
			}
		}
	}
	return natural + 1
}

// memoryAligned is alignedWindow's cut with the memory section's block (see
// memoryDropBlock); natural is the oldest message the natural cut keeps.
func memoryAligned(ps []piece, natural int, cut func(kind string) bool) int {
	span := ps[0].seq - ps[natural].seq + 1
	b := uint64(minDropBlock) // the blocks are 4, 6, 8, 12, 16, 24, ...: coarse, so b holds turn after turn
	for {
		next := b + b/2 // 4 → 6, 8 → 12
		if b%3 == 0 {
			next = b + b/3 // 6 → 8, 12 → 16
		}
		if next > span*3/4 {
			break
		}
		b = next
	}
	c := (ps[natural].seq + b - 1) / b * b // the cut, rounded up to the block
	for j := natural; j >= 0; j-- {
		if ps[j].seq >= c && cut(ps[j].kind) {
			return j + 1
		}
	}
	return natural + 1
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// pairTools makes tool traffic valid for every provider: each assistant message with tool
// calls is followed by exactly the results of those calls, and no two calls share an id.
// A call without a result right after it, or with an empty id, is replaced by a note in
// the message's content; a tool result that answers no call right before it is left out.
// A call whose id an earlier call already used (a model that gives every call "call_1")
// keeps its place and its own result, both under an id of the same length made new by
// freshID (the note when none is left). It returns the messages and the number of results
// left out. Every change keeps a message's cost or makes it smaller by the cost accounting
// (a note is shorter than callOverhead plus the name; a new id is as long as the old).
func pairTools(msgs []Message) ([]Message, int) {
	out := make([]Message, 0, len(msgs))
	seen := make(map[string]bool) // lookups only; never iterated
	dropped := 0
	for i := 0; i < len(msgs); {
		m := msgs[i]
		i++
		if m.Role == RoleTool {
			dropped++
			continue
		}
		if len(m.ToolCalls) == 0 {
			out = append(out, m)
			continue
		}
		end := i
		for end < len(msgs) && msgs[end].Role == RoleTool {
			end++
		}
		run := msgs[i:end]
		i = end
		answer := answers(m.ToolCalls, run)
		var keep []ToolCall
		ids := make([]string, len(m.ToolCalls)) // the id each kept call is shown with
		for c, call := range m.ToolCalls {
			if answer[c] != 0 && seen[call.ID] {
				call.ID, _ = freshID(call.ID, seen)
			}
			if answer[c] == 0 || call.ID == "" {
				if answer[c] != 0 {
					dropped++
				}
				m.Content = joinNonEmpty(m.Content, unansweredNote(call.Name))
				continue
			}
			seen[call.ID] = true
			ids[c] = call.ID
			keep = append(keep, call)
		}
		m.ToolCalls = keep
		out = append(out, m)
		// Results in the order they were recorded, each under its call's id.
		for r := range run {
			if c := slices.Index(answer, r+1); c >= 0 && ids[c] != "" {
				res := run[r]
				res.ToolCallID = ids[c]
				out = append(out, res)
			} else if c < 0 {
				dropped++
			}
		}
	}
	return out, dropped
}

// answers pairs calls with the results in run: answer[c] is the index in run (plus one)
// of the result that answers calls[c], the first not yet taken with its id; 0 for none.
// Calls that share an id are thus answered in the order their results were recorded (the
// tools record each call's result before the next call).
func answers(calls []ToolCall, run []Message) []int {
	answer := make([]int, len(calls))
	for r := range run {
		for c := range calls {
			if answer[c] == 0 && calls[c].ID != "" && calls[c].ID == run[r].ToolCallID {
				answer[c] = r + 1
				break
			}
		}
	}
	return answer
}

// freshID returns an id as long as id that seen does not hold: id with its end replaced by
// "-" and a number in base 36 from 2 ("call_1" → "call-2"), or by the number alone when id
// is too short for the dash; false when no such id is left (a very short id, used very
// often). ids are sanitized, ASCII.
func freshID(id string, seen map[string]bool) (string, bool) {
	for n := int64(2); ; n++ {
		t := strconv.FormatInt(n, 36)
		switch {
		case len(t)+1 < len(id):
			t = "-" + t
		case len(t) > len(id):
			return "", false
		}
		if c := id[:len(id)-len(t)] + t; !seen[c] {
			return c, true
		}
	}
}
