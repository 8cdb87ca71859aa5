package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
)

// ContextUser is implemented by agents that may not need the conversation so far: one
// whose UsesContext returns false (the echo agent) gets only the current message, and the
// gateway skips reading history and projecting for it. Every other agent gets both.
type ContextUser interface {
	UsesContext() bool
}

func usesContext(a agent.Agent) bool {
	cu, ok := a.(ContextUser)
	return !ok || cu.UsesContext()
}

// metaUpstream is the AGENT_REPLY metadata key of a relay's upstream contextId.
const metaUpstream = "upstreamContextId"

// metaUpstreamTask is the AGENT_REPLY metadata key of the upstream task a relay's reply
// left waiting for input; only the latest reply's counts.
const metaUpstreamTask = "upstreamTaskId"

// conversational reports whether a ledger entry may be projected to a model: visible
// messages and tool traffic; never status, errors or audit records.
func conversational(e *ledger.Entry) bool {
	if e.Visibility != ledger.VisibilityModel {
		return false
	}
	switch e.Kind {
	case ledger.KindUserMessage, ledger.KindAgentReply, ledger.KindToolCall, ledger.KindToolResult:
		return true
	}
	return false
}

// toItem converts a ledger entry into the projector's input.
func toItem(e *ledger.Entry) projection.Item {
	it := projection.Item{
		Seq: e.Seq, Kind: string(e.Kind), Role: e.Role, Trust: projection.Trust(e.Trust),
		Visibility: string(e.Visibility), Actor: e.Actor, Text: entryText(e),
	}
	for _, p := range e.Parts {
		if p.ArtifactRef != "" {
			it.ArtifactRef, it.Size = p.ArtifactRef, p.Size
		}
	}
	if e.Kind == ledger.KindAgentReply && strings.Contains(string(e.Metadata), `"`+metaPartial+`":true`) {
		it.Partial = true // the metadata is our own compact JSON
	}
	return it
}

func entryText(e *ledger.Entry) string {
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

// prepared is what a turn gives its agent, built from the ledger before the turn's
// message is appended.
type prepared struct {
	prompt       string
	request      projection.Request
	upstream     string // the latest upstream contextId recorded
	upstreamTask string // the upstream task the latest reply left waiting for input
}

// prepare reads the conversation's prior entries (those the projection can use) and
// builds the agent's input for the current message. history is the newest entries,
// oldest first, all with seq below the current message's.
func (r *Runner) prepare(history []ledger.Entry, peer string, current ledger.Entry) (prepared, error) {
	items := make([]projection.Item, 0, len(history))
	var out prepared
	for i := range history {
		e := &history[i]
		if e.Kind == ledger.KindAgentReply {
			if u := metaString(e.Metadata, metaUpstream); u != "" {
				out.upstream = u
			}
			out.upstreamTask = metaString(e.Metadata, metaUpstreamTask)
		}
		items = append(items, toItem(e))
	}
	pol := r.cfg.Policy
	pol.Peer = peer
	cur := toItem(&current)
	req, _, err := projection.Build(items, cur, pol)
	if err != nil {
		return prepared{}, fmt.Errorf("projection: %w", err)
	}
	out.request = req
	out.prompt = req.Text()
	return out, nil
}

// readHistory returns the entries the projection of a message of the conversation may use:
// the newest conversational entries with seq < beforeSeq (0: all so far; at most twice the
// policy's limit, room for tool traffic), oldest first. Reading by seq bound makes the
// history of a turn the same whether it is read live or rebuilt later (replay).
func (r *Runner) readHistory(ctx context.Context, peer, contextID string, beforeSeq uint64) ([]ledger.Entry, error) {
	n := 2 * r.cfg.Policy.HistoryLimit
	if n <= 0 {
		n = 1 // still find a relay's upstream contextId in the last reply
	}
	entries, err := r.led.LastBefore(ctx, peer, contextID, beforeSeq, n, conversational)
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return nil, fmt.Errorf("read history: %w", err)
	}
	if err := r.inflate(ctx, entries); err != nil {
		return nil, err
	}
	return entries, nil
}

// Replay rebuilds what the agent was given at the turn whose message is at seq atSeq of the
// conversation (0: the latest turn; any seq inside a turn selects that turn's message): the
// same history read (entries before the message), the same projection. With the same
// policy it equals the live input byte for byte. Errors wrap ledger.ErrNotFound when the
// conversation or the turn does not exist.
func Replay(ctx context.Context, led Ledger, policy projection.Policy, owner, contextID string, atSeq uint64) (agent.Turn, error) {
	var before uint64
	if atSeq > 0 {
		before = atSeq + 1
	}
	msgs, err := led.LastBefore(ctx, owner, contextID, before, 1, func(e *ledger.Entry) bool {
		return e.Kind == ledger.KindUserMessage && e.Visibility == ledger.VisibilityModel
	})
	if err != nil {
		return agent.Turn{}, err
	}
	if len(msgs) == 0 {
		return agent.Turn{}, fmt.Errorf("no turn at or before seq %d: %w", atSeq, ledger.ErrNotFound)
	}
	r := &Runner{cfg: Config{Policy: policy}, led: led}
	if err := r.inflate(ctx, msgs); err != nil {
		return agent.Turn{}, err
	}
	msg := msgs[0]
	hist, err := r.readHistory(ctx, owner, contextID, msg.Seq)
	if err != nil {
		return agent.Turn{}, err
	}
	prep, err := r.prepare(hist, owner, msg)
	if err != nil {
		return agent.Turn{}, err
	}
	return agent.Turn{
		ContextID: contextID, TaskID: msg.TaskID, Peer: owner, Text: entryText(&msg),
		Prompt: prep.prompt, Request: prep.request, UpstreamContextID: prep.upstream, UpstreamTaskID: prep.upstreamTask,
	}, nil
}
