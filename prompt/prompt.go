// Package prompt builds what an agent is given at a turn from the ledger: the history
// read by seq bound (DESIGN H-1), the entries turned into the projector's items, and the
// projection (P-1..P-4). The turn runner builds the live input with it, and the
// conversations service rebuilds the same input later (replay), so the two cannot drift:
// with the same ledger and policy, the replayed input equals the live one byte for byte.
//
// Memory (issue #38): under Policy.Memory a turn is planned first ([PlanTurn]), the
// snapshot for the plan's drop boundary is looked for among the entries read
// ([Plan.Stored]) or made by the caller ([Extractive], or a model's checked proposal) and
// stored with the turn's message, and the plan is rendered with it ([Plan.Input]);
// [Replay] finds the same snapshot (the one stored with the message, else the stored one
// for the boundary). A turn's final STATUS records its request's figures ([Figures]).
//
// A live turn plans through a [Cache] ([Cache.PlanTurn]): its conversation's window is
// kept from the previous turn and only the entries appended since are read, so the cost
// of a turn does not grow with the conversation; the plan equals [PlanTurn]'s.
//
// # Imports
//
// ledger (its entry model and sentinels), memory, projection and the standard library. It
// reads the ledger only through [Reader], declared here, and writes nothing.
package prompt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/memory"
	"github.com/a2a-gateway/gateway/projection"
)

// Metadata keys of AGENT_REPLY entries that the prompt reads back. The turn runner writes
// them.
const (
	// MetaPartial marks a reply that was cut short (true).
	MetaPartial = "partial"
	// MetaUpstream is a relay's upstream contextId.
	MetaUpstream = "upstreamContextId"
	// MetaUpstreamTask is the upstream task a relay's reply left waiting for input; only
	// the latest reply's counts.
	MetaUpstreamTask = "upstreamTaskId"
	// MetaToolCallID and MetaToolName, in a TOOL_CALL or TOOL_RESULT entry's metadata,
	// are the call's id and the tool's name; a TOOL_CALL's text is its arguments.
	MetaToolCallID = "toolCallId"
	MetaToolName   = "toolName"
)

// Reader is what the prompt reads of the ledger. Implemented by *ledger.Store.
type Reader interface {
	LastBefore(ctx context.Context, owner, contextID string, beforeSeq uint64, n int, keep func(*ledger.Entry) bool) ([]ledger.Entry, error)
	Range(ctx context.Context, owner, contextID string, afterSeq uint64, limit int) ([]ledger.Entry, error)
	Inflate(ctx context.Context, entries []ledger.Entry) error
}

// Input is what a turn gives its agent, built from the ledger before the turn's message
// is appended.
type Input struct {
	Prompt       string             // the single-text prompt (Request.Text())
	Request      projection.Request // the provider-neutral request
	Upstream     string             // the latest upstream contextId recorded ("" if none)
	UpstreamTask string             // the upstream task the latest reply left waiting for input
	Stats        projection.Stats   // what the projection did (OmittedBefore: the drop boundary)
	// Memory is the snapshot shown in the memory section (nil: none), and MemorySeq the
	// seq of its MEMORY_SNAPSHOT entry (0 until stored: a snapshot the turn makes is
	// stored with its message).
	Memory    *ledger.MemorySnapshot
	MemorySeq uint64
}

// Conversational reports whether a ledger entry may be projected to a model: visible
// messages and tool traffic; never status, errors or audit records. They are the entries
// a memory snapshot may summarise and cite, so the one rule is memory.Source.
func Conversational(e *ledger.Entry) bool { return memory.Source(e) }

func conversationalOrMemory(e *ledger.Entry) bool {
	return e.Kind == ledger.KindMemorySnapshot || Conversational(e)
}

// Item converts a ledger entry into the projector's input.
func Item(e *ledger.Entry) projection.Item {
	it := projection.Item{
		Seq: e.Seq, Kind: string(e.Kind), Role: e.Role, Trust: projection.Trust(e.Trust),
		Visibility: string(e.Visibility), Actor: e.Actor, Text: EntryText(e),
	}
	for _, p := range e.Parts {
		if p.ArtifactRef != "" {
			it.ArtifactRef, it.Size = p.ArtifactRef, p.Size
		}
	}
	if e.Kind == ledger.KindToolCall || e.Kind == ledger.KindToolResult {
		it.ToolCallID, it.ToolName = metaString(e, MetaToolCallID), metaString(e, MetaToolName)
		if e.Kind == ledger.KindToolCall {
			it.ToolArgs, it.Text = it.Text, ""
		}
	}
	if e.Kind == ledger.KindAgentReply && strings.Contains(string(e.Metadata), `"`+MetaPartial+`":true`) {
		it.Partial = true // the metadata is the runner's own compact JSON
	}
	return it
}

// EntryText is the concatenated text of an entry's parts.
func EntryText(e *ledger.Entry) string {
	if len(e.Parts) == 1 {
		return e.Parts[0].Text
	}
	var n int
	for _, p := range e.Parts {
		n += len(p.Text)
	}
	b := make([]byte, 0, n)
	for _, p := range e.Parts {
		b = append(b, p.Text...)
	}
	return string(b)
}

// Build builds the agent's input for the current message of peer from history (the
// newest conversational entries before it, oldest first) under policy (whose Peer is set
// to peer). Errors are the projection's, wrapped.
func Build(history []ledger.Entry, policy projection.Policy, peer string, current ledger.Entry) (Input, error) {
	return BuildWithMemory(history, policy, peer, current, nil)
}

// BuildWithMemory is [Build] with mem, the snapshot of the dropped turns, shown in the
// memory section when the projection drops turns (projection.BuildWithMemory).
func BuildWithMemory(history []ledger.Entry, policy projection.Policy, peer string, current ledger.Entry, mem *ledger.MemorySnapshot) (Input, error) {
	pl, err := NewPlan(history, policy, peer, current)
	if err != nil {
		return Input{}, err
	}
	return pl.Input(mem), nil
}

// Plan is a turn's projection decided before its memory is chosen (projection.Plan):
// its drop boundary is known, and the snapshot for it can be looked for among the
// history entries read ([Plan.Stored]) or made.
type Plan struct {
	plan *projection.Plan
	hist []ledger.Entry
	base Input // the upstream ids
	// With a [Cache]: the window's memo of the projection's forms and of the snapshots
	// decoded (nil: none), and done, which returns the window to the cache once the plan
	// is rendered (Input).
	memo  *projection.Memo
	snaps map[uint64]*ledger.MemorySnapshot
	w     *window
	done  func()
}

// NewPlan plans the input of [Build] (same arguments, same errors).
func NewPlan(history []ledger.Entry, policy projection.Policy, peer string, current ledger.Entry) (*Plan, error) {
	items := make([]projection.Item, len(history))
	ups := make([]upstream, len(history))
	for i := range history {
		items[i], ups[i] = Item(&history[i]), upstreamOf(&history[i])
	}
	return newPlan(history, items, ups, policy, peer, current, nil)
}

// upstream is what an AGENT_REPLY entry records of a relay's upstream (reply false for
// any other entry).
type upstream struct {
	reply         bool
	context, task string
}

func upstreamOf(e *ledger.Entry) upstream {
	if e.Kind != ledger.KindAgentReply {
		return upstream{}
	}
	return upstream{reply: true, context: metaString(e, MetaUpstream), task: metaString(e, MetaUpstreamTask)}
}

// newPlan is NewPlan given the history's items and upstream records (parallel to
// history), its forms from memo (nil: none).
func newPlan(history []ledger.Entry, items []projection.Item, ups []upstream, policy projection.Policy, peer string, current ledger.Entry, memo *projection.Memo) (*Plan, error) {
	var base Input
	for _, u := range ups {
		if u.reply {
			if u.context != "" {
				base.Upstream = u.context
			}
			base.UpstreamTask = u.task
		}
	}
	policy.Peer = peer
	pl, err := projection.NewPlanMemo(items, Item(&current), policy, memo)
	if err != nil {
		return nil, fmt.Errorf("projection: %w", err)
	}
	return &Plan{plan: pl, hist: history, base: base, memo: memo}, nil
}

// Boundary is the plan's drop boundary (0: nothing dropped).
func (p *Plan) Boundary() uint64 { return p.plan.Boundary() }

// Input renders the plan with mem in the memory section (nil: none). A plan made
// through a [Cache] returns its conversation's window to the cache here: later calls
// render without the window's memo (the same input).
func (p *Plan) Input(mem *ledger.MemorySnapshot) Input {
	req, st := p.plan.Request(ProjectMemory(mem))
	out := p.base
	out.Request, out.Stats, out.Memory = req, st, mem
	if st.MemoryFacts == 0 {
		out.Memory = nil
	}
	out.Prompt = req.TextWith(p.memo)
	if done := p.done; done != nil {
		p.done, p.memo, p.snaps, p.w = nil, nil, nil, nil
		p.plan.Detach()
		done()
	}
	return out
}

// History returns the entries the projection of a message of the conversation may use:
// the newest conversational entries with seq < beforeSeq (0: all so far; at most twice the
// policy's history limit, room for tool traffic), oldest first, artifacts inflated; with
// Policy.Memory, the MEMORY_SNAPSHOT entries among them too (the one for the drop
// boundary is always among them: see [Plan.Stored]).
// Reading by seq bound makes the history of a turn the same whether it is read live or
// rebuilt later. A conversation that does not exist yet has no history (nil, nil).
func History(ctx context.Context, r Reader, policy projection.Policy, owner, contextID string, beforeSeq uint64) ([]ledger.Entry, error) {
	return historyN(ctx, r, policy, owner, contextID, beforeSeq, historyMax(policy))
}

// historyMax is how many entries History reads: twice the history limit (at least one).
func historyMax(policy projection.Policy) int {
	return max(2*policy.HistoryLimit, 1) // with no history, still find a relay's upstream contextId in the last reply
}

// firstRead is how many entries PlanTurn reads first under Policy.Memory.
const firstRead = 48

// PlanTurn reads the history of the message current (seq < beforeSeq, 0: all so far) and
// plans its projection. Without Policy.Memory it reads what History reads. With it, it
// reads the newest firstRead entries, and the firstRead before those, and so on (up to
// History's number), only while the plan used every entry it was given
// (projection.Plan.NeedsOlder): a turn of a long conversation reads what its window
// needs, not twice the history limit. Replay plans with it too, so it reads what the
// live turn read. Errors are the ledger's (a conversation that does not exist has no
// history, not an error) and the projection's, wrapped.
func PlanTurn(ctx context.Context, r Reader, policy projection.Policy, owner, contextID string, beforeSeq uint64, current ledger.Entry) (*Plan, error) {
	full := historyMax(policy)
	step := full
	if policy.Memory {
		step = min(full, firstRead)
	}
	var hist []ledger.Entry
	for before := beforeSeq; ; {
		older, err := historyN(ctx, r, policy, owner, contextID, before, min(step, full-len(hist)))
		if err != nil {
			return nil, err
		}
		hist = append(older, hist...)
		pl, err := NewPlan(hist, policy, owner, current)
		if err != nil || len(older) < step || len(hist) >= full || !pl.plan.NeedsOlder() {
			return pl, err
		}
		before = older[0].Seq
	}
}

// historyN is History reading at most n entries.
func historyN(ctx context.Context, r Reader, policy projection.Policy, owner, contextID string, beforeSeq uint64, n int) ([]ledger.Entry, error) {
	keep := Conversational
	if policy.Memory {
		keep = conversationalOrMemory
	}
	entries, err := r.LastBefore(ctx, owner, contextID, beforeSeq, n, keep)
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return nil, fmt.Errorf("read history: %w", err)
	}
	if err := inflate(ctx, r, entries); err != nil {
		return nil, err
	}
	return entries, nil
}

// inflate loads the artifacts of entries that reference one.
func inflate(ctx context.Context, r Reader, entries []ledger.Entry) error {
	for i := range entries {
		for j := range entries[i].Parts {
			if entries[i].Parts[j].ArtifactRef != "" {
				if err := r.Inflate(ctx, entries); err != nil {
					return fmt.Errorf("inflate artifacts: %w", err)
				}
				return nil
			}
		}
	}
	return nil
}

// Turn is what the agent was given at one turn, rebuilt from the ledger.
type Turn struct {
	ContextID, TaskID, Peer string
	Text                    string // the turn's message
	Input
}

// Replay rebuilds what the agent was given at the turn whose message is at seq atSeq of
// the conversation (0: the latest turn; any seq inside a turn selects that turn's
// message): the same history read (entries before the message), the same projection.
// Errors wrap ledger.ErrNotFound when the conversation or the turn does not exist;
// otherwise they are the ledger's or the projection's.
func Replay(ctx context.Context, r Reader, policy projection.Policy, owner, contextID string, atSeq uint64) (Turn, error) {
	var before uint64
	if atSeq > 0 {
		before = atSeq + 1
	}
	msgs, err := r.LastBefore(ctx, owner, contextID, before, 1, func(e *ledger.Entry) bool {
		return e.Kind == ledger.KindUserMessage && e.Visibility == ledger.VisibilityModel
	})
	if err != nil {
		return Turn{}, err
	}
	if len(msgs) == 0 {
		return Turn{}, fmt.Errorf("no turn at or before seq %d: %w", atSeq, ledger.ErrNotFound)
	}
	if err := inflate(ctx, r, msgs); err != nil {
		return Turn{}, err
	}
	msg := msgs[0]
	pl, err := PlanTurn(ctx, r, policy, owner, contextID, msg.Seq, msg)
	if err != nil {
		return Turn{}, err
	}
	in, err := replayMemory(ctx, r, policy, owner, contextID, pl, msg)
	if err != nil {
		return Turn{}, err
	}
	return Turn{ContextID: contextID, TaskID: msg.TaskID, Peer: owner, Text: EntryText(&msg), Input: in}, nil
}
