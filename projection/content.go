package projection

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/history"
	"github.com/a2a-gateway/gateway/redact"
)

// Size accounting (see Stats): every message costs its content plus msgOverhead bytes
// (the role label or trust tag a rendering adds), every tool call its id, name and
// arguments plus callOverhead bytes (enough for the note that replaces an unanswered
// call).
const (
	msgOverhead  = 32
	callOverhead = 48
)

// Compaction (DESIGN P-3). compactBytes is the length a long message is cut to once
// compaction is on; compactArgsBytes the length above which a call's arguments are
// replaced.
const (
	compactBytes     = 1024
	compactArgsBytes = 256
)

// precutMargin is how far beyond its cap a text is read: enough for what Filter and redact.Text
// may remove (control characters, a private key block) without scanning megabytes.
const precutMargin = 4096

// maxRefBytes caps an artifact reference quoted in a placeholder.
const maxRefBytes = 100

// cost returns the bytes m counts for in a section's budget.
func cost(m *Message) int {
	n := len(m.Content) + msgOverhead + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments) + callOverhead
	}
	return n
}

// clean turns untrusted text into message content, in this order: cut (at a white-space
// boundary, so no partial credential is left at the end) to about limit plus a margin,
// history.Filter (role lines, template tokens, boundary imitations, control characters),
// trust tags neutralised, credentials redacted (and Filter again if that changed
// anything), white space trimmed. The result is a fixed point of history.Filter. It is
// not yet cut to limit: see fit.
func clean(raw string, limit int) (string, int) {
	if margin := limit + precutMargin; len(raw) > margin {
		raw = precut(raw, margin)
	}
	s := neutralizeTrust(history.Filter(raw))
	s, n := redact.TextCount(s)
	if n > 0 {
		s = neutralizeTrust(history.Filter(s))
	}
	return strings.TrimSpace(s), n
}

// precut shortens s to at most n bytes at a rune boundary and then back to the last white
// space in the final kilobyte, so that a credential straddling the cut is dropped whole
// rather than left as a fragment too short to recognise.
func precut(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	s = s[:n]
	lo := max(0, len(s)-1024)
	if i := strings.LastIndexAny(s[lo:], " \t\r\n"); i >= 0 {
		return s[:lo+i]
	}
	return s[:lo]
}

// fit returns s cut so that, with the cut marker, it is at most limit bytes; the marker
// names the original size (total bytes) and the artifact reference. Texts of at most
// limit bytes are returned unchanged.
func fit(s string, limit int, total int64, ref string) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	marker := cutMarker(total, ref)
	keep := max(limit-len(marker), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	head := strings.TrimRight(s[:keep], " \t\n\u200d")
	if head == "" {
		return strings.TrimSpace(marker), true
	}
	return head + marker, true
}

// cutMarker ends a message that was cut: " […cut: 12,345 bytes in total; artifact
// sha256:…]".
func cutMarker(total int64, ref string) string {
	m := " […cut: " + thousands(total) + " bytes in total"
	if ref != "" {
		m += "; artifact " + ref
	}
	return m + "]"
}

// notInlined is the content of a message whose text is in the artifact store only.
func notInlined(size int64, ref string) string {
	return "[content not inlined: " + thousands(size) + " bytes; artifact " + ref + "]"
}

// resultPlaceholder replaces a tool result once compaction is on.
func resultPlaceholder(name string, size int64, ref string) string {
	s := "[tool result omitted to save context: "
	if name != "" {
		s = "[result of tool " + name + " omitted to save context: "
	}
	s += thousands(size) + " bytes"
	if ref != "" {
		s += "; artifact " + ref
	}
	return s + "]"
}

// argsPlaceholder replaces tool-call arguments that are too long to show.
func argsPlaceholder(n int) string {
	return `{"omitted":"arguments of ` + thousands(int64(n)) + ` bytes"}`
}

// unansweredNote replaces a tool call whose result is not in the request. It is at most
// callOverhead-1 bytes longer than the tool's name.
func unansweredNote(name string) string {
	return "[tool " + name + " was called; no result recorded]"
}

// partialNote ends an agent reply whose turn failed before the reply was complete.
const partialNote = " [reply incomplete: the turn failed]"

// thousands formats n with comma separators: 12345 -> "12,345".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// neutralizeTrust rewrites the opening bracket of "[trust:" (any case, white space
// around "trust", "=" or a fullwidth colon for ":", a fullwidth bracket) to "(" so that
// text cannot imitate the trust tag the mappers put in front of a message. It is linear
// and returns s itself when there is nothing to rewrite.
func neutralizeTrust(s string) string {
	if strings.IndexByte(s, '[') < 0 && !strings.Contains(s, "［") {
		return s
	}
	var b []byte
	last := 0 // s[:last] is in b
	for i := 0; i < len(s); i++ {
		n := 0 // length of the bracket at s[i]
		switch {
		case s[i] == '[':
			n = 1
		case s[i] == 0xef && strings.HasPrefix(s[i:], "［"):
			n = len("［")
		}
		if n == 0 || !trustTagAt(s[i+n:]) {
			continue
		}
		b = append(b, s[last:i]...)
		b = append(b, '(')
		last = i + n
		i = last - 1
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// trustTagAt reports whether s starts with white space, "trust" in any case, white space
// and a colon, "=" or a fullwidth colon.
func trustTagAt(s string) bool {
	s = strings.TrimLeft(s, " \t")
	if len(s) < 5 || !strings.EqualFold(s[:5], "trust") {
		return false
	}
	s = strings.TrimLeft(s[5:], " \t")
	return strings.HasPrefix(s, ":") || strings.HasPrefix(s, "=") || strings.HasPrefix(s, "：")
}

// sanitizeRef makes an artifact reference safe to quote in a placeholder: printable
// ASCII without brackets or white space, at most maxRefBytes.
func sanitizeRef(ref string) string {
	var b strings.Builder
	for i := 0; i < len(ref) && b.Len() < maxRefBytes; i++ {
		c := ref[i]
		if c > ' ' && c < 0x7f && c != '[' && c != ']' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// sanitizeName makes a tool name acceptable to every provider: [A-Za-z0-9_-], 1 to 64
// bytes; other bytes become "_", an empty name "tool".
func sanitizeName(name string) string {
	if name == "" {
		return "tool"
	}
	b := []byte(name[:min(len(name), 64)])
	for i, c := range b {
		if !idByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// sanitizeID makes a tool-call id acceptable to every provider: an id of 1 to 64 bytes
// of [A-Za-z0-9_-] is kept, any other non-empty id becomes "call_" and 24 hex digits of
// its SHA-256 (deterministic, so a call and its result still match). "" stays "".
func sanitizeID(id string) string {
	if id == "" || validID(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "call_" + hex.EncodeToString(sum[:12])
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return false
		}
	}
	return true
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// cleanArgs turns tool-call arguments into what a request carries: credentials redacted,
// valid JSON compacted, invalid UTF-8 replaced, "" read as "{}", and anything longer than
// limit replaced by argsPlaceholder. Arguments are not passed through history.Filter,
// which would break JSON; they travel as structured data, never in a text rendering's
// first column.
func cleanArgs(raw string, limit int) (args string, redactions int, cut bool) {
	if len(raw) > limit+precutMargin {
		return argsPlaceholder(len(raw)), 0, true
	}
	s, n := redact.TextCount(strings.ToValidUTF8(raw, "\uFFFD"))
	s = strings.TrimSpace(s)
	if s == "" {
		return "{}", n, false
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) == nil {
		s = b.String()
	}
	if len(s) > limit {
		return argsPlaceholder(len(raw)), n, true
	}
	return s, n, false
}
