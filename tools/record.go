package tools

import (
	"context"
	"encoding/json"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/redact"
)

// outboundLink names the outbound conversation and remote task a peer_send made.
type outboundLink struct {
	Peer         string `json:"peer"`
	Owner        string `json:"outboundOwner"`
	ContextID    string `json:"outboundContextId"`
	RemoteTaskID string `json:"remoteTaskId,omitempty"`
	State        string `json:"state,omitempty"`
}

// toolMeta is a tool entry's metadata; its first two keys are prompt.MetaToolCallID and
// prompt.MetaToolName, which the next turn's projection reads back.
type toolMeta struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	Outcome    string `json:"outcome,omitempty"`
	*outboundLink
}

// recordCall stores the TOOL_CALL entry (the arguments redacted) and returns it.
func (tt *turnTools) recordCall(ctx context.Context, c agent.ToolCall) (ledger.Entry, error) {
	meta, _ := json.Marshal(toolMeta{ToolCallID: redact.Text(c.ID), ToolName: c.Name})
	stored, err := tt.t.Record(ctx, ledger.Entry{
		Kind: ledger.KindToolCall, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel,
		Actor: "agent", Role: ledger.RoleAgent, CorrelationID: redact.Text(c.ID),
		Parts: []ledger.Part{{Kind: ledger.PartText, Text: redact.Text(c.Arguments)}}, Metadata: meta,
	})
	if err != nil {
		return ledger.Entry{}, err
	}
	return stored[0], nil
}

// recordResult stores the TOOL_RESULT entry: caused by the call, correlated with the
// outbound conversation when the call made one, PEER_UNTRUSTED (a peer's words, or a
// listing that carries them).
func (tt *turnTools) recordResult(ctx context.Context, c agent.ToolCall, call ledger.Entry, out outcome) error {
	meta, _ := json.Marshal(toolMeta{ToolCallID: redact.Text(c.ID), ToolName: c.Name, Outcome: out.status, outboundLink: out.link})
	e := ledger.Entry{
		Kind: ledger.KindToolResult, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
		Actor: "gateway", Role: ledger.RoleUser, CausationID: call.ID, CorrelationID: redact.Text(c.ID),
		Parts: []ledger.Part{{Kind: ledger.PartText, Text: redact.Text(out.text)}}, Metadata: meta,
	}
	if out.link != nil {
		e.CorrelationID = out.link.ContextID
	}
	_, err := tt.t.Record(ctx, e)
	return err
}
