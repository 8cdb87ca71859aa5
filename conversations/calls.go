package conversations

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
)

// MaxCallDepth bounds how many conversations deep [Service.Calls] follows calls.
const MaxCallDepth = 8

// peerSendTool is the name of the tool whose calls start outbound conversations (package
// tools' ToolPeerSend, which this package cannot import).
const peerSendTool = "peer_send"

// CallTree is the calls around one conversation that this gateway holds: the tool calls
// its turns made (down, through peer_send to the outbound conversations they started),
// what started it (up: the tool calls an outbound conversation's messages came from),
// and the chain of gateways an inbound conversation's messages travelled (the hops
// extension; those conversations live elsewhere, so the chain is text).
type CallTree struct {
	Root CallNode `json:"root"`
	// CausedBy: for an outbound conversation a turn's tools made, each conversation and
	// call (only that call) one of its messages was sent from.
	CausedBy []CallNode `json:"causedBy,omitempty"`
	// Hop is how many agent-to-agent calls led to the root (or to what caused it);
	// Hops the gateways and contextIds they passed through, oldest first.
	Hop  int           `json:"hop"`
	Hops []a2a.HopLink `json:"hops,omitempty"`
}

// CallNode is one conversation of a call tree.
type CallNode struct {
	Peer      string `json:"peer"` // the conversation's owner
	ContextID string `json:"contextId"`
	// Held is false for a conversation a call names that this gateway does not hold.
	Held bool `json:"held"`
	// State is the task state of the exchange the node stands for (an outbound
	// conversation under a call) or of the conversation's latest task.
	State string `json:"state,omitempty"`
	// LatencyMS: under a call, from the call to the peer's reply; otherwise how long the
	// latest task ran (0: not known).
	LatencyMS float64 `json:"latencyMs,omitempty"`
	// Link is where the console shows the conversation ("" when not held, or when the
	// service has no Config.Link).
	Link  string     `json:"link,omitempty"`
	Calls []ToolCall `json:"calls,omitempty"`
	// Reply is the peer's side of an outbound conversation when this gateway holds it in
	// the same scope (the peer called was this gateway, reached as the same owner).
	Reply *CallNode `json:"reply,omitempty"`
	// Cut says why the node's calls are not followed: "depth" (MaxCallDepth) or "cycle"
	// (the conversation is already in the tree); "" when they are.
	Cut string `json:"cut,omitempty"`
}

// ToolCall is one TOOL_CALL entry with its result: the tool's name, its arguments key by
// key, and, for a peer_send that reached a peer, the outbound conversation it started.
type ToolCall struct {
	EntryID string    `json:"entryId"`
	Seq     uint64    `json:"seq"`
	Name    string    `json:"name"`
	At      time.Time `json:"at"`
	// Args are the top-level keys of the arguments' JSON object in the model's order,
	// each value as text (a string as it is, anything else as compact JSON);
	// ArgsText is the arguments when they are not an object.
	Args     []Arg  `json:"args,omitempty"`
	ArgsText string `json:"argsText,omitempty"`
	// Outcome ("ok", "refused", "failed"; "" with no result yet) and the start of the
	// result's text.
	Outcome   string    `json:"outcome,omitempty"`
	Result    string    `json:"result,omitempty"`
	LatencyMS float64   `json:"latencyMs,omitempty"`
	Outbound  *CallNode `json:"outbound,omitempty"`
}

// Arg is one argument of a tool call.
type Arg struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Calls returns the call tree of the conversation ref. The tree stays inside one inbound
// owner's scope: the conversation's owner (for an outbound conversation a turn's tools
// started, the owner of that turn) and the outbound conversations its turns started
// (peers.TurnOwner). A call's outbound conversation is looked up under that scope's
// outbound owner only, and an origin naming another owner is not followed, whatever
// the stored metadata says. Errors: those of [Service.Find]; otherwise the ledger's.
func (s *Service) Calls(ctx context.Context, ref Ref) (CallTree, error) {
	c, err := s.Find(ctx, ref)
	if err != nil {
		return CallTree{}, err
	}
	scope, outbound := c.Owner, false
	if _, via, ok := peers.ParseOwner(c.Owner); ok {
		scope, outbound = via, true // "" for the operator's own: nothing caused it here
	}
	w := &callWalk{s: s, scope: scope, seen: map[string]bool{}}
	entries, err := w.entries(ctx, c)
	if err != nil {
		return CallTree{}, err
	}
	tree := CallTree{}
	if tree.Root, err = w.expand(ctx, c, entries, 0); err != nil {
		return CallTree{}, err
	}
	hops := hopsOf(entries)
	if outbound {
		if tree.CausedBy, hops, err = w.causes(ctx, entries); err != nil {
			return CallTree{}, err
		}
	}
	tree.Hop, tree.Hops = hops.Hop, hops.Chain
	return tree, nil
}

// callWalk builds one call tree: the scope it stays in and the conversations it has
// shown.
type callWalk struct {
	s     *Service
	scope string
	seen  map[string]bool // owner + "\x00" + contextId
}

// entries are the conversation's entries, oldest first, without audit-only ones.
func (w *callWalk) entries(ctx context.Context, c ledger.Conversation) ([]ledger.Entry, error) {
	return w.s.led.Last(ctx, c.Owner, c.ContextID, int(c.LastSeq)+1, conversationOnly)
}

// lookup reads a conversation of the scope; held is false when the ledger has none.
func (w *callWalk) lookup(ctx context.Context, owner, contextID string) (ledger.Conversation, []ledger.Entry, bool, error) {
	c, err := w.s.led.Conversation(ctx, owner, contextID)
	if errors.Is(err, ledger.ErrNotFound) {
		return c, nil, false, nil
	}
	if err != nil {
		return c, nil, false, err
	}
	entries, err := w.entries(ctx, c)
	return c, entries, err == nil, err
}

// node is the conversation's node without its calls: state and latency of its latest
// task, and its link.
func (w *callWalk) node(owner, contextID string, entries []ledger.Entry, held bool) CallNode {
	n := CallNode{Peer: owner, ContextID: contextID, Held: held}
	if !held {
		return n
	}
	if w.s.cfg.Link != nil {
		n.Link = w.s.cfg.Link(owner, contextID)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if e := &entries[i]; e.Kind == ledger.KindStatus && e.State != "" {
			n.State = e.State
			n.LatencyMS = millis(e.CreatedAt.Sub(taskStart(entries, e.TaskID, e.CreatedAt)))
			break
		}
	}
	return n
}

// taskStart is when the task's first entry was written (at when none names it).
func taskStart(entries []ledger.Entry, taskID string, at time.Time) time.Time {
	for i := range entries {
		if taskID != "" && entries[i].TaskID == taskID {
			return entries[i].CreatedAt
		}
	}
	return at
}

func millis(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1000
}

// expand is c's node with its tool calls, each peer_send followed to its outbound
// conversation, depth conversations below the root (none without a scope: an operator's
// outbound conversation has no turns, and no owner's outbound conversations are its).
func (w *callWalk) expand(ctx context.Context, c ledger.Conversation, entries []ledger.Entry, depth int) (CallNode, error) {
	n := w.node(c.Owner, c.ContextID, entries, true)
	key := c.Owner + "\x00" + c.ContextID
	switch {
	case w.seen[key]:
		n.Cut = "cycle"
		return n, nil
	case depth >= MaxCallDepth:
		n.Cut = "depth"
		return n, nil
	}
	w.seen[key] = true
	n.Calls = toolCalls(entries, "")
	links := resultLinks(entries)
	for i := range n.Calls {
		call := &n.Calls[i]
		link := links[call.EntryID]
		if call.Name != peerSendTool || link.ContextID == "" || !peers.ValidName(link.Peer) || w.scope == "" {
			continue
		}
		out, err := w.outbound(ctx, c, *call, link, depth+1)
		if err != nil {
			return n, err
		}
		call.Outbound = &out
	}
	return n, nil
}

// outbound is the node of the outbound conversation a peer_send call of c started: looked
// up under the scope's own outbound owner for the peer (never the owner the result's
// metadata names), with the exchange the call made (found by the origin its message
// records), and the peer's side when this gateway holds it in the same scope.
func (w *callWalk) outbound(ctx context.Context, c ledger.Conversation, call ToolCall, link outboundMeta, depth int) (CallNode, error) {
	owner := peers.TurnOwner(link.Peer, w.scope)
	_, entries, held, err := w.lookup(ctx, owner, link.ContextID)
	if err != nil {
		return CallNode{}, err
	}
	n := w.node(owner, link.ContextID, entries, held)
	if !held {
		n.State = link.State
		return n, nil
	}
	if ex, ok := exchangeOf(entries, Origin{Owner: c.Owner, ContextID: c.ContextID, EntryID: call.EntryID}); ok {
		n.State = ex.state
		n.LatencyMS = millis(ex.replyAt.Sub(call.At))
	}
	rc, rentries, rheld, err := w.lookup(ctx, w.scope, link.ContextID)
	if err != nil || !rheld {
		return n, err
	}
	reply, err := w.expand(ctx, rc, rentries, depth+1)
	n.Reply = &reply
	return n, err
}

// exchange is one outbound exchange: the peer's reply time and the final state.
type exchange struct {
	replyAt time.Time
	state   string
}

// exchangeOf finds, in an outbound conversation's entries, the exchange whose message
// records origin o (owner, contextId and call entry), and its reply and status.
func exchangeOf(entries []ledger.Entry, o Origin) (exchange, bool) {
	for i := range entries {
		got, ok := originOf(&entries[i])
		if !ok || got.Owner != o.Owner || got.ContextID != o.ContextID || got.EntryID != o.EntryID {
			continue
		}
		var ex exchange
		for _, e := range entries[i+1:] {
			if e.Kind == ledger.KindUserMessage {
				break
			}
			switch e.Kind {
			case ledger.KindAgentReply:
				ex.replyAt = e.CreatedAt
			case ledger.KindStatus:
				ex.state = e.State
			}
		}
		return ex, true
	}
	return exchange{}, false
}

// originOf is the Origin an outbound USER_MESSAGE records (OriginKey in its metadata).
func originOf(e *ledger.Entry) (Origin, bool) {
	if e.Kind != ledger.KindUserMessage || len(e.Metadata) == 0 {
		return Origin{}, false
	}
	var m map[string]json.RawMessage
	var o Origin
	if json.Unmarshal(e.Metadata, &m) != nil || m[OriginKey] == nil || json.Unmarshal(m[OriginKey], &o) != nil {
		return Origin{}, false
	}
	return o, o.Owner != "" && o.ContextID != ""
}

// causes are the calls an outbound conversation's messages came from, each as its
// conversation's node with only that call, in the scope only (an origin naming another
// owner is not followed); and the hop chain of the first of those conversations.
func (w *callWalk) causes(ctx context.Context, entries []ledger.Entry) ([]CallNode, a2a.Hops, error) {
	var out []CallNode
	var hops a2a.Hops
	done := map[Origin]bool{}
	for i := range entries {
		o, ok := originOf(&entries[i])
		if !ok || w.scope == "" || o.Owner != w.scope || done[o] {
			continue
		}
		done[o] = true
		_, oentries, held, err := w.lookup(ctx, o.Owner, o.ContextID)
		if err != nil {
			return nil, hops, err
		}
		n := w.node(o.Owner, o.ContextID, oentries, held)
		if held && o.EntryID != "" {
			n.Calls = toolCalls(oentries, o.EntryID)
		}
		if held && len(out) == 0 {
			hops = hopsOf(oentries)
		}
		out = append(out, n)
	}
	return out, hops, nil
}

// hopsOf is the hop data of a conversation's inbound messages, merged (a2a.Hops.Merge)
// as the tools merge it; malformed data (refused at admission) counts as none.
func hopsOf(entries []ledger.Entry) a2a.Hops {
	var h a2a.Hops
	for i := range entries {
		e := &entries[i]
		if e.Kind != ledger.KindUserMessage || len(e.Metadata) == 0 {
			continue
		}
		var meta map[string]any
		if json.Unmarshal(e.Metadata, &meta) != nil {
			continue
		}
		if got, err := a2a.ParseHops(meta); err == nil {
			h = h.Merge(got)
		}
	}
	return h
}
