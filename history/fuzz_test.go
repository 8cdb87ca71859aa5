package history

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSep separates the turns of a fuzz input. Filter drops it, so it never reaches a
// rendered message.
const fuzzSep = "\x1e"

// FuzzRender builds turns from the input (split on fuzzSep, roles alternating from user)
// and checks the invariants of Render: deterministic; "" exactly when nothing in the window
// has text; otherwise one Open line first, one Close line last, every body line a labelled
// message start or an indented continuation, labels in turn order, no forged role line, no
// boundary imitation, no chat-template token, and every message within the byte cap.
func FuzzRender(f *testing.F) {
	all := make([]string, 0, len(injectionCorpus))
	for _, c := range injectionCorpus {
		f.Add(c.text, uint8(DefaultLimit), uint16(0))
		all = append(all, c.text)
	}
	f.Add(strings.Join(all, fuzzSep), uint8(DefaultLimit), uint16(0))
	f.Add(strings.Join(all, fuzzSep), uint8(3), uint16(9))
	f.Add(strings.Join(all, "\n"), uint8(255), uint16(64))
	f.Add("q1"+fuzzSep+"a1"+fuzzSep+"q2", uint8(2), uint16(1))
	f.Fuzz(func(t *testing.T, data string, limit uint8, maxBytes uint16) {
		parts := strings.Split(data, fuzzSep)
		turns := make([]Turn, len(parts))
		for i, p := range parts {
			turns[i] = Turn{Role: RoleUser, Text: p}
			if i%2 == 1 {
				turns[i].Role = RoleAssistant
			}
		}
		opts := Options{Limit: int(limit), MaxMessageBytes: int(maxBytes)}
		out := Render(turns, opts)
		if again := Render(turns, opts); again != out {
			t.Fatalf("Render() not deterministic: %q then %q", out, again)
		}

		window := turns
		if n := min(int(limit), MaxLimit); n == 0 {
			window = nil
		} else if len(window) > n {
			window = window[len(window)-n:]
		}
		var roles []Role
		for _, tt := range window {
			if strings.TrimSpace(Filter(tt.Text)) != "" {
				roles = append(roles, tt.Role)
			}
		}
		if len(roles) == 0 {
			if out != "" {
				t.Fatalf("Render() = %q, want \"\" (no text in the window)", out)
			}
			return
		}
		capBytes := int(maxBytes)
		if capBytes == 0 {
			capBytes = DefaultMaxMessageBytes
		}
		checkRendered(t, out, roles, capBytes)
	})
}

// FuzzFilter checks that Filter is deterministic and idempotent, returns valid UTF-8
// without control characters other than tab and newline, and leaves no line with a role
// marker, a boundary imitation or a chat-template token.
func FuzzFilter(f *testing.F) {
	for _, c := range injectionCorpus {
		f.Add(c.text)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Filter(in)
		if again := Filter(in); again != out {
			t.Fatalf("Filter(%q) not deterministic: %q then %q", in, out, again)
		}
		if twice := Filter(out); twice != out {
			t.Fatalf("Filter(Filter(%q)) = %q, want %q", in, twice, out)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("Filter(%q) = %q, not valid UTF-8", in, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\t' && r != '\n' || r >= 0x7f && r <= 0x9f || r == '\u2028' || r == '\u2029' {
				t.Fatalf("Filter(%q) = %q keeps control character %U", in, out, r)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			checkFilteredLine(t, "Filter", line)
		}
		checkTokens(t, out)
	})
}
