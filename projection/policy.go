package projection

import "github.com/a2a-gateway/gateway/history"

// The ledger kinds [Build] projects (the values of ledger.Kind). Every other kind
// (STATUS, ERROR_EVENT, AUDIT, REPLY_CHUNK and any kind added later) is left out: the
// projection is an allowlist.
const (
	KindUserMessage = "USER_MESSAGE" // a message a peer (or the operator) sent: role user
	KindAgentReply  = "AGENT_REPLY"  // our agent's reply: role assistant
	KindToolCall    = "TOOL_CALL"    // a tool call our agent made: role assistant, ToolCalls
	KindToolResult  = "TOOL_RESULT"  // what the tool returned: role tool
)

// VisibilityModel is the only visibility [Build] projects (ledger.VisibilityModel).
// AUDIT_ONLY entries, and entries with any other or no visibility, never reach a model.
const VisibilityModel = "MODEL_VISIBLE"

// Item is one ledger entry as the projector sees it. The caller converts ledger entries
// (the projector does not import the ledger); Build reads only the fields below and
// never modifies items.
type Item struct {
	// Seq is the entry's ledger sequence number (1, 2, ... per conversation). Build uses
	// it as the entry's position from the start of the conversation, so that its
	// compaction and drop decisions stay the same turn after turn even when the caller
	// passes only the newest entries. History items must be in strictly increasing Seq
	// order; the current item's Seq is not used.
	Seq        uint64
	Kind       string // a ledger kind; see KindUserMessage etc.
	Role       string // "user", "agent" or ""; informational: Kind decides the model role
	Trust      Trust  // the entry's trust level; empty or unknown values count as PEER_UNTRUSTED
	Visibility string // "MODEL_VISIBLE" or "AUDIT_ONLY"; only MODEL_VISIBLE is projected
	Actor      string // who wrote the entry; informational
	Text       string // the entry's text (its text parts, concatenated)
	// ArtifactRef is the content-addressed reference ("sha256:<hex>") of a part the
	// ledger moved to its artifact store, and Size the original byte size of that part.
	// Placeholders name them. When Text is empty and ArtifactRef is set, the content is
	// shown as a placeholder naming the reference.
	ArtifactRef string
	Size        int64
	ToolCallID  string // TOOL_CALL: the call's id; TOOL_RESULT: the call it answers
	ToolName    string // TOOL_CALL (and optionally TOOL_RESULT): the tool's name
	ToolArgs    string // TOOL_CALL: the arguments, JSON text
	Partial     bool   // AGENT_REPLY: the turn failed after this much of the reply
}

// Budget is the size of each section of a request, in tokens as counted by
// [EstimateTokens]. A zero field means the default (DefaultSystemTokens etc.); a
// negative one is invalid.
type Budget struct {
	// System bounds the instruction stack. Build fails with [ErrOverBudget] rather than
	// cut policy text.
	System int
	// History bounds the history messages (earlier turns and the drop marker), counted
	// as [Stats] documents. Build compacts and then drops the oldest turns to fit.
	History int
	// Current bounds the current message; a longer one is cut with a marker. Values
	// below MinCurrentTokens are raised to it.
	Current int
	// Memory is the part of History set aside for the memory section when
	// Policy.Memory is on and turns are dropped; 0: DefaultMemoryTokens; at most half of
	// History.
	Memory int
}

// Budget defaults and limits, in tokens.
const (
	DefaultSystemTokens  = 2048
	DefaultHistoryTokens = 8192
	DefaultCurrentTokens = 8192
	DefaultMemoryTokens  = 512
	MinCurrentTokens     = 64
)

// MinMessageBytes is the smallest per-message cap: Policy.MaxMessageBytes values below it
// (but above zero) are raised to it, so a cut marker always fits.
const MinMessageBytes = 256

// Policy is what the gateway's configuration and the turn's authentication contribute to
// a projection. The zero value is valid: default platform policy, no operator policy, no
// history, default budgets.
type Policy struct {
	// Platform is the platform policy, the top of the instruction stack;
	// "" means DefaultPlatformPolicy.
	Platform string
	// Operator is the operator policy from the configuration; "" means none.
	Operator string
	// Peer is the authenticated identity of the peer agent (from its credential, never
	// from the request body); the peer framing names it. "" reads as "unknown".
	Peer string
	// HistoryLimit is how many of the newest history messages may be shown (the drop
	// marker counts as one). Zero or negative: no history; values above
	// history.MaxLimit are capped at it. The caller chooses (history.DefaultLimit is 20).
	HistoryLimit int
	// MaxMessageBytes caps every history message's text (a longer one is cut with a
	// marker naming its size and artifact); zero or negative means
	// history.DefaultMaxMessageBytes, values below MinMessageBytes are raised to it.
	MaxMessageBytes int
	// Budget bounds each section, in tokens.
	Budget Budget
	// Memory turns on the memory section (issue #38): once turns are dropped, the window
	// leaves Budget.Memory for the memory of the dropped turns ([BuildWithMemory]).
	Memory bool
}

// EstimateTokens is the token estimate budgets are counted in: ceil(len(s)/4), one token
// per four bytes. It is deterministic and needs no tokenizer; real tokenizers give
// about that for English prose and more tokens per byte for code, JSON and non-Latin
// scripts, so leave headroom below a model's context window.
func EstimateTokens(s string) int { return tokensOf(len(s)) }

// tokensOf is EstimateTokens for a byte count.
func tokensOf(n int) int { return (n + 3) / 4 }

// Validate reports what [Build] would reject in p alone: a negative budget (wraps
// [ErrInvalid]) or an instruction stack over Budget.System (wraps [ErrOverBudget]). The
// gateway can call it at startup.
func (p Policy) Validate() error {
	cfg, err := p.resolve()
	if err != nil {
		return err
	}
	_, err = systemText(cfg)
	return err
}

// config is a Policy with defaults applied and sizes in bytes.
type config struct {
	p               Policy
	limit           int // history messages, 0..history.MaxLimit
	maxMessageBytes int
	systemTokens    int
	historyBytes    int
	currentBytes    int
	memoryBytes     int // set aside for the memory section; 0 when Memory is off
}

func (p Policy) resolve() (config, error) {
	b := p.Budget
	if b.System < 0 || b.History < 0 || b.Current < 0 || b.Memory < 0 {
		return config{}, invalid("budget %+v: negative", b)
	}
	c := config{p: p, limit: min(max(p.HistoryLimit, 0), history.MaxLimit), maxMessageBytes: p.MaxMessageBytes}
	if c.maxMessageBytes <= 0 {
		c.maxMessageBytes = history.DefaultMaxMessageBytes
	}
	c.maxMessageBytes = max(c.maxMessageBytes, MinMessageBytes)
	c.systemTokens = orDefault(b.System, DefaultSystemTokens)
	c.historyBytes = 4 * orDefault(b.History, DefaultHistoryTokens)
	c.currentBytes = 4 * max(orDefault(b.Current, DefaultCurrentTokens), MinCurrentTokens)
	if p.Memory {
		c.memoryBytes = min(4*orDefault(b.Memory, DefaultMemoryTokens), c.historyBytes/2)
	}
	return c, nil
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// MemoryBytes is the size of the memory section in bytes (Budget.Memory resolved, at
// most half the history budget; 0 when Memory is off or the policy is invalid): the
// most a memory message costs, header and evidence ids included.
func (p Policy) MemoryBytes() int {
	c, err := p.resolve()
	if err != nil {
		return 0
	}
	return c.memoryBytes
}
