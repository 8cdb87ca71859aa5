package projection

// MaxUntrustedBytes is how much of an untrusted text [Untrusted] keeps.
const MaxUntrustedBytes = 16 << 10

// Untrusted returns raw as content a backend may put in front of a model as a peer's
// words: cut to about [MaxUntrustedBytes] (with a marker saying so), then cleaned as
// [Build] cleans ledger content: history.Filter (role lines, chat-template tokens,
// boundary imitations, control characters), trust-tag imitations neutralised,
// credentials redacted. Agent backends use it for tool results made of a peer's reply,
// which never pass through Build in the turn that fetched them.
func Untrusted(raw string) string {
	s, _ := clean(raw, MaxUntrustedBytes)
	if len(s) > MaxUntrustedBytes {
		s = precut(s, MaxUntrustedBytes) + "\n[cut: the rest was left out]"
	}
	return s
}
