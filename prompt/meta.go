package prompt

import (
	"encoding/json"

	"github.com/a2a-gateway/gateway/ledger"
)

// metaString is the string at key of an entry's metadata ("" if absent or not a string).
func metaString(e *ledger.Entry, key string) string {
	if len(e.Metadata) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(e.Metadata, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

// Metadata keys of a turn's final STATUS entry (issue #38): MetaFigures holds the
// request's [Figures], MetaUsage the provider's token counts (agent.Usage: inputTokens,
// outputTokens, cachedTokens). The turn runner writes them.
const (
	MetaFigures = "prompt"
	MetaUsage   = "usage"
)

// Figures is what a turn records of the request it gave its agent: its size, and its
// longest common prefix with the conversation's previous request (what keeps providers'
// prompt caches hitting), in bytes of the single-text rendering (measured to 128 bytes by
// the runner) and estimated tokens.
type Figures struct {
	RequestBytes  int `json:"requestBytes"`
	RequestTokens int `json:"requestTokens"`
	// PrevRequestBytes is the conversation's previous request's size (0: none known to
	// the instance that ran the turn); ReuseBytes and ReuseTokens the common prefix.
	PrevRequestBytes int `json:"previousRequestBytes"`
	ReuseBytes       int `json:"prefixReuseBytes"`
	ReuseTokens      int `json:"prefixReuseTokens"`
	// MemorySeq is the MEMORY_SNAPSHOT shown when it was stored before the turn (a
	// snapshot made for the turn is stored right after its message); MemoryFacts the
	// facts shown; OmittedBefore the drop boundary.
	MemorySeq     uint64 `json:"memorySeq,omitempty"`
	MemoryFacts   int    `json:"memoryFacts,omitempty"`
	OmittedBefore uint64 `json:"omittedBefore,omitempty"`
}

// Usage is the provider's token counts a turn records (agent.Usage's encoding).
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	CachedTokens int64 `json:"cachedTokens"`
}

// FiguresOf decodes the figures and usage a turn's final STATUS entry records; nil for
// what it does not record.
func FiguresOf(e *ledger.Entry) (*Figures, *Usage) {
	if e.Kind != ledger.KindStatus || len(e.Metadata) == 0 {
		return nil, nil
	}
	var m struct {
		Figures *Figures `json:"prompt"`
		Usage   *Usage   `json:"usage"`
	}
	if json.Unmarshal(e.Metadata, &m) != nil {
		return nil, nil
	}
	return m.Figures, m.Usage
}
