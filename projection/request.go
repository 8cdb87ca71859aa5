package projection

// This file is the contract between the projector (Build) and the agent backends that
// send its result to a model: the provider-neutral request and its mappers.

// Role is the role of a message in a provider-neutral request.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // a tool result answering ToolCallID
)

// Trust tags say how far a message's content may be believed (the ledger's trust levels).
type Trust string

// Trust tags.
const (
	TrustPeerUntrusted Trust = "PEER_UNTRUSTED"
	TrustOperator      Trust = "OPERATOR_TRUSTED"
	TrustAgent         Trust = "AGENT_GENERATED"
	TrustSystem        Trust = "SYSTEM"
	TrustModel         Trust = "MODEL_GENERATED" // a memory snapshot: proposed by a summariser, checked against its evidence
)

// ToolCall is a tool invocation an assistant message made.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// Message is one message of a provider-neutral request.
type Message struct {
	Role       Role
	Content    string
	Trust      Trust
	ToolCalls  []ToolCall // assistant messages only
	ToolCallID string     // tool messages only: the call this result answers
}

// Request is what an agent backend sends to a model for one turn: the instruction stack
// as System, then the messages in order, the current message last. Requests are
// deterministic: the same ledger and policy give byte-identical mapped bodies.
type Request struct {
	System   string
	Messages []Message
}
