package redact

import "strings"

// Cut shortens s to n characters and an ellipsis, never inside a redaction placeholder
// (a placeholder the cut would split is kept whole), so that a shortened text still
// shows what was redacted and never a part of a marker.
func Cut(s string, n int) string {
	count := 0
	for i := range s {
		if count < n {
			count++
			continue
		}
		i = pastPlaceholder(s, i)
		if i >= len(s) {
			return s
		}
		return s[:i] + "…"
	}
	return s
}

// pastPlaceholder is i, or the end of the redaction placeholder of s that i falls inside.
func pastPlaceholder(s string, i int) int {
	for j := 0; ; {
		p := strings.Index(s[j:], Prefix)
		if p < 0 || j+p >= i {
			return i
		}
		end := strings.IndexByte(s[j+p:], ']')
		if end < 0 {
			return i
		}
		if j += p + end + 1; j > i {
			return j
		}
	}
}
