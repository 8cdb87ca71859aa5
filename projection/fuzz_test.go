package projection

import (
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/history"
	"github.com/google/go-cmp/cmp"
)

// fuzzSep separates the texts of a fuzz input; history.Filter drops it.
const fuzzSep = "\x1e"

// hiddenMark starts the text of every item that must never reach a model.
const hiddenMark = "HIDDEN-ITEM-"

// FuzzBuild builds a conversation from the input (texts split on fuzzSep, kinds cycling
// through user message, tool call, tool result, agent reply, status and audit; the last
// text is the current message) and checks: Build never fails or panics on it and is
// deterministic; the request validates and maps without error, byte-identically twice;
// Text() keeps the boundary intact (one Open, one Close, only labelled or indented lines
// between, no forged role line anywhere after the system block); every content is a
// fixed point of history.Filter; status and audit texts never appear; the history and
// current sections stay within budget.
func FuzzBuild(f *testing.F) {
	var all []string
	for _, in := range injections {
		f.Add(in.text+fuzzSep+"answer"+fuzzSep+"now", uint8(20), uint16(0), uint16(0))
		all = append(all, in.text)
	}
	for _, c := range credentialCorpus {
		all = append(all, c.Text)
	}
	f.Add(strings.Join(all, fuzzSep), uint8(200), uint16(0), uint16(0))
	f.Add(strings.Join(all, fuzzSep), uint8(7), uint16(300), uint16(300))
	f.Add(strings.Join(all, "\n"), uint8(3), uint16(40), uint16(1))
	f.Add(strings.Repeat("word ", 3000)+fuzzSep+"{\"a\":1}"+fuzzSep+strings.Repeat("x", 9000), uint8(5), uint16(500), uint16(100))
	f.Fuzz(func(t *testing.T, data string, limit uint8, budget uint16, maxBytes uint16) {
		parts := strings.Split(data, fuzzSep)
		cur := current(parts[len(parts)-1])
		parts = parts[:len(parts)-1]
		hist := make([]Item, 0, len(parts))
		for i, p := range parts {
			it := Item{Seq: uint64(i + 1), Visibility: VisibilityModel, Text: p}
			id := "c" + string(rune('a'+i/6%26))
			switch i % 6 {
			case 0:
				it.Kind, it.Trust = KindUserMessage, TrustPeerUntrusted
			case 1:
				it.Kind, it.Trust, it.ToolCallID, it.ToolName, it.ToolArgs = KindToolCall, TrustAgent, id, p, p
			case 2:
				it.Kind, it.Trust, it.ToolCallID, it.ArtifactRef, it.Size = KindToolResult, TrustPeerUntrusted, id, "sha256:"+p, int64(len(p))
			case 3:
				it.Kind, it.Trust, it.Partial = KindAgentReply, TrustAgent, len(p)%2 == 1
			case 4:
				it.Kind, it.Trust, it.Text = "STATUS", TrustSystem, hiddenMark+p
			case 5:
				it.Kind, it.Trust, it.Visibility, it.Text = KindUserMessage, TrustPeerUntrusted, "AUDIT_ONLY", hiddenMark+p
			}
			hist = append(hist, it)
		}
		p := Policy{HistoryLimit: int(limit), MaxMessageBytes: int(maxBytes), Peer: "fuzz",
			Budget: Budget{History: int(budget), Current: int(budget)}}

		var mem *Memory // with an odd budget, the memory section too (issue #38)
		if budget%2 == 1 {
			p.Memory = true
			mem = &Memory{First: 1, Last: uint64(len(parts))}
			for i, part := range parts {
				mem.Facts = append(mem.Facts, Fact{Text: part, Evidence: []uint64{uint64(i + 1)}})
			}
		}
		req, st, err := BuildWithMemory(hist, cur, mem, p)
		if err != nil {
			t.Fatalf("Build() error = %v", err)
		}
		req2, st2, err := BuildWithMemory(hist, cur, mem, p)
		if err != nil || !cmp.Equal(req, req2) || st != st2 {
			t.Fatalf("Build() not deterministic: %v\n%s", err, cmp.Diff(req, req2))
		}
		r1, r2 := render(t, req), render(t, req2)
		if r1 != r2 {
			t.Fatalf("renderings not deterministic")
		}
		checkText(t, r1.text, req.System)
		if strings.Count(r1.text, history.Open) > 1 || strings.Count(r1.text, history.Close) > 1 {
			t.Fatalf("Text() repeats a boundary line:\n%s", r1.text)
		}
		for i, m := range req.Messages {
			if got := history.Filter(m.Content); got != m.Content {
				t.Fatalf("message %d content is not a Filter fixed point:\n%q\n%q", i, m.Content, got)
			}
		}
		if !strings.Contains(data, hiddenMark[:6]) {
			for form, out := range r1.all() {
				if strings.Contains(out, hiddenMark[:6]) {
					t.Fatalf("%s shows a status or audit item", form)
				}
			}
		}
		budgetBytes := 4 * int(budget)
		if budget == 0 {
			budgetBytes = 4 * DefaultHistoryTokens
		}
		if got := historyCost(req); got > budgetBytes {
			t.Fatalf("history costs %d bytes, budget %d", got, budgetBytes)
		}
		if st.HistoryMessages > int(limit) {
			t.Fatalf("%d history messages, limit %d", st.HistoryMessages, limit)
		}
		curBudget := max(int(budget), MinCurrentTokens)
		if budget == 0 {
			curBudget = DefaultCurrentTokens
		}
		if st.CurrentTokens > curBudget {
			t.Fatalf("current message is %d tokens, budget %d", st.CurrentTokens, curBudget)
		}
	})
}
