package turn

import (
	"encoding/json"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/a2a-gateway/gateway/prompt"
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

// AGENT_REPLY metadata keys the prompt reads back (package prompt owns them).
const (
	metaUpstream     = prompt.MetaUpstream
	metaUpstreamTask = prompt.MetaUpstreamTask
)

// prepared is what a turn gives its agent, built from the ledger before the turn's
// message is appended.
type prepared struct {
	prompt       string
	request      projection.Request
	upstream     string // the latest upstream contextId recorded
	upstreamTask string // the upstream task the latest reply left waiting for input
	stats        projection.Stats
	// memEntries are the memory snapshot made for this turn and its audits, stored with
	// the message (memory.go); memorySeq the seq of the stored snapshot shown (0: none or
	// made now).
	memEntries []ledger.Entry
	memorySeq  uint64
	memory     *ledger.MemorySnapshot
	// The request's longest common prefix with the conversation's previous request
	// (prefixTracker; bytes of the single-text rendering, to 128 bytes): recorded in the
	// final STATUS entry (promptMeta).
	requestBytes, prevBytes, reuseBytes int
}

// promptMeta is the final STATUS metadata of a turn given p, whose agent reported u; nil
// when there is nothing to record (an agent given no history: echo).
func promptMeta(p *prepared, u agent.Usage) json.RawMessage {
	m := map[string]any{}
	if p.requestBytes > 0 {
		m[prompt.MetaFigures] = prompt.Figures{RequestBytes: p.requestBytes, RequestTokens: projection.EstimateTokens(p.prompt),
			PrevRequestBytes: p.prevBytes, ReuseBytes: p.reuseBytes, ReuseTokens: (p.reuseBytes + 3) / 4,
			MemorySeq: p.memorySeq, MemoryFacts: p.stats.MemoryFacts, OmittedBefore: p.stats.OmittedBefore}
	}
	if u != (agent.Usage{}) {
		m[prompt.MetaUsage] = u
	}
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m)
	return b
}

// preparedOf is what the agent is given from the prompt's input.
func preparedOf(in prompt.Input) prepared {
	return prepared{prompt: in.Prompt, request: in.Request, upstream: in.Upstream, upstreamTask: in.UpstreamTask,
		stats: in.Stats, memory: in.Memory}
}
