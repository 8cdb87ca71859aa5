// Package tools implements the tools the gateway offers the agent behind it (DESIGN T-1,
// T-2; issue #18): peers_list, peer_send and conversation_history. A [Box] makes one
// value per turn (turn.ToolBox); each call is recorded in the calling conversation as a
// TOOL_CALL entry and its answer as a TOOL_RESULT entry (redacted; a peer's words are
// PEER_UNTRUSTED), and a peer_send is sent and recorded exactly as `gateway send` does
// (peers.Directory's target grammar, conversations.RecordOutbound).
//
// Calls between agents are bounded: a message a tool sends carries, under the
// [HopsExtension] key of its metadata, its hop count and the chain of gateways and
// contextIds it came through. A call past the hop limit, or back to a gateway or a
// conversation already in the chain, is refused, and the model is told so as the tool's
// result.
package tools
