package prompt

import (
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/google/go-cmp/cmp"
)

func TestItemOfToolEntries(t *testing.T) {
	t.Parallel()
	meta := []byte(`{"toolCallId":"call_1","toolName":"peer_send","outcome":"ok"}`)
	text := func(s string) []ledger.Part { return []ledger.Part{{Kind: ledger.PartText, Text: s}} }
	tests := []struct {
		e    ledger.Entry
		want projection.Item
	}{
		{ledger.Entry{Seq: 2, Kind: ledger.KindToolCall, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel, Parts: text(`{"target":"b"}`), Metadata: meta},
			projection.Item{Seq: 2, Kind: "TOOL_CALL", Trust: projection.TrustAgent, Visibility: "MODEL_VISIBLE", ToolCallID: "call_1", ToolName: "peer_send", ToolArgs: `{"target":"b"}`}},
		{ledger.Entry{Seq: 3, Kind: ledger.KindToolResult, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Parts: text("reply"), Metadata: meta},
			projection.Item{Seq: 3, Kind: "TOOL_RESULT", Trust: projection.TrustPeerUntrusted, Visibility: "MODEL_VISIBLE", ToolCallID: "call_1", ToolName: "peer_send", Text: "reply"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, Item(&tc.e)); diff != "" {
			t.Errorf("Item(%s) (-want +got):\n%s", tc.e.Kind, diff)
		}
	}
}
