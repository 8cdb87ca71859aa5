package memory

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/redact"
)

// Extractive is the name of the deterministic summariser in a snapshot's Summariser.
const Extractive = "extractive"

// Limits bounds a snapshot. The zero value is valid: DefaultBytes and DefaultFactBytes.
type Limits struct {
	// Bytes bounds the sum of the facts' texts; 0: DefaultBytes.
	Bytes int
	// FactBytes bounds one extracted fact; 0: DefaultFactBytes (at most
	// ledger.MaxMemoryFactBytes).
	FactBytes int
}

// Defaults.
const (
	DefaultBytes     = 1536
	DefaultFactBytes = 160
)

func (l Limits) resolve() Limits {
	if l.Bytes <= 0 {
		l.Bytes = DefaultBytes
	}
	if l.FactBytes <= 0 {
		l.FactBytes = DefaultFactBytes
	}
	l.FactBytes = min(l.FactBytes, ledger.MaxMemoryFactBytes)
	return l
}

// Source reports whether an entry may be summarised and cited: a MODEL_VISIBLE user
// message, agent reply, tool call or tool result.
func Source(e *ledger.Entry) bool {
	if e.Visibility != ledger.VisibilityModel {
		return false
	}
	switch e.Kind {
	case ledger.KindUserMessage, ledger.KindAgentReply, ledger.KindToolCall, ledger.KindToolResult:
		return true
	}
	return false
}

// Text is the text of an entry a fact may be taken from: its text parts, concatenated.
func Text(e *ledger.Entry) string {
	var b strings.Builder
	for _, p := range e.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Extract is the deterministic extractive summariser: the snapshot of the range
// first..last made from early (the oldest source entries of the range, oldest first) and
// recent (the newest ones, oldest first; the two may overlap). Each source entry gives at
// most one fact: its text with white space collapsed, cut at a word boundary to
// FactBytes (its first sentence when that is shorter), citing that entry. Up to half of
// the byte budget goes to the earliest facts (where a conversation states its task), the
// rest to the newest; the facts are in seq order. Entries outside the range, or whose text
// holds a redaction placeholder (a REDACTED entry), give no fact. The same arguments give the same snapshot.
func Extract(first, last uint64, early, recent []ledger.Entry, lim Limits) ledger.MemorySnapshot {
	lim = lim.resolve()
	snap := ledger.MemorySnapshot{Version: ledger.MemoryVersion, First: first, Last: last, Summariser: Extractive}
	taken := map[uint64]bool{}
	var facts []ledger.MemoryFact
	used := 0
	add := func(e *ledger.Entry, budget int) bool {
		if taken[e.Seq] || e.Seq < first || e.Seq > last || !Source(e) {
			return true
		}
		full := Text(e)
		text := excerpt(full, lim.FactBytes)
		if text == "" || strings.Contains(full, redact.Prefix) {
			return true
		}
		if used+len(text) > budget {
			return false
		}
		used += len(text)
		taken[e.Seq] = true
		facts = append(facts, ledger.MemoryFact{Text: text, Evidence: []ledger.Evidence{{Seq: e.Seq, Hash: e.Hash}}, Trust: e.Trust})
		return true
	}
	for i := range early {
		if !add(&early[i], lim.Bytes/2) {
			break
		}
	}
	for i := len(recent) - 1; i >= 0; i-- {
		if !add(&recent[i], lim.Bytes) {
			break
		}
	}
	slices.SortFunc(facts, func(a, b ledger.MemoryFact) int { return compareSeq(a.Evidence[0].Seq, b.Evidence[0].Seq) })
	snap.Facts = facts
	return snap
}

func compareSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// excerpt is s with white space collapsed, cut to its first sentence or to at most n
// bytes at a word boundary, whichever is shorter.
func excerpt(s string, n int) string {
	s = collapsed(s, n+2)
	if i := sentenceEnd(s); i > 0 && i <= n {
		return s[:i]
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > n/2 {
		cut = sp
	}
	return strings.TrimSpace(s[:cut])
}

// collapsed is s with white space collapsed (strings.Fields joined by spaces), or a
// prefix of that of at least n bytes: excerpt reads no further, and a long text is not
// collapsed whole. The prefix is the collapse of a prefix of s cut at a rune boundary,
// which is a prefix of the whole collapse (a word cut short is still the start of that
// word).
func collapsed(s string, n int) string {
	if k := 4 * n; k < len(s) {
		for k > 0 && !utf8.RuneStart(s[k]) {
			k--
		}
		if p := strings.Join(strings.Fields(s[:k]), " "); len(p) >= n {
			return p
		}
	}
	return strings.Join(strings.Fields(s), " ")
}

// sentenceEnd is the end of s's first sentence (after ". ", "! " or "? "), 0 if none.
func sentenceEnd(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && s[i+1] == ' ' {
			return i + 1
		}
	}
	return 0
}

// Tokens returns the content tokens of s (see the package doc), lower-cased, in order.
func Tokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if content(w) {
			out = append(out, strings.ToLower(w))
		}
	}
	return out
}

// content reports whether a token decides support: three letters or more, or a digit.
func content(w string) bool {
	if utf8.RuneCountInString(w) >= 3 {
		return true
	}
	return strings.IndexFunc(w, unicode.IsDigit) >= 0
}

// Supported reports whether every content token of fact occurs among the tokens of
// texts, and fact has at least one.
func Supported(fact string, texts ...string) bool {
	want := Tokens(fact)
	if len(want) == 0 {
		return false
	}
	have := map[string]bool{}
	for _, t := range texts {
		for _, w := range Tokens(t) {
			have[w] = true
		}
	}
	for _, w := range want {
		if !have[w] {
			return false
		}
	}
	return true
}

// describe is a fact's text shortened for an audit record.
func describe(s string) string {
	if len(s) > 200 {
		return redact.Cut(s, 200)
	}
	return s
}

// errorf is a reason.
func errorf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// LeastTrusted is the trust level a fact citing entries of the levels given carries:
// PEER_UNTRUSTED if any is (or is unknown), else the first.
func LeastTrusted(levels ...ledger.Trust) ledger.Trust {
	for _, t := range levels {
		if t == ledger.TrustPeerUntrusted || !t.Valid() {
			return ledger.TrustPeerUntrusted
		}
	}
	if len(levels) == 0 {
		return ledger.TrustPeerUntrusted
	}
	return levels[0]
}
