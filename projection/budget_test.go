package projection

import (
	"fmt"
	"strings"
	"testing"
)

// itemsOf returns the first n items of a generated conversation (whole turns and the
// start of the next one).
func itemsOf(n int, o convOptions) []Item {
	per := 1 + 1 // user message, reply
	if o.statuses {
		per += 2
	}
	if o.resultBytes > 0 {
		per += 2
	}
	items := conversation(n/per+1, o)
	items = items[:n]
	// History ends before the current message: trim a trailing user message.
	for len(items) > 0 && items[len(items)-1].Kind == KindUserMessage {
		items = items[:len(items)-1]
	}
	return items
}

// TestBudget: the injected history never exceeds its budget, whatever the length of the
// conversation (100, 1,000 and 10,000 items), the budget and the limit; neither does the
// current message.
func TestBudget(t *testing.T) {
	t.Parallel()
	shapes := []struct {
		name string
		opts convOptions
	}{
		{"chat", convOptions{statuses: true, userBytes: 300, replyBytes: 900}},
		{"tools", convOptions{statuses: true, resultBytes: 20_000, userBytes: 120, replyBytes: 300}},
		{"long messages", convOptions{userBytes: 9000, replyBytes: 7000}},
	}
	for _, n := range []int{100, 1000, 10_000} {
		for _, shape := range shapes {
			items := itemsOf(n, shape.opts)
			for _, budget := range []int{0, 100, 600, 2000, 8192, 30_000} {
				for _, limit := range []int{1, 20, 200} {
					name := fmt.Sprintf("%d items/%s/budget %d/limit %d", n, shape.name, budget, limit)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						p := Policy{HistoryLimit: limit, Budget: Budget{History: budget, Current: 1000}}
						req, st := mustBuild(t, items, current(strings.Repeat("long current message ", 1000)), p)
						budgetBytes := 4 * budget
						if budget == 0 {
							budgetBytes = 4 * DefaultHistoryTokens
						}
						if got := historyCost(req); got > budgetBytes || st.HistoryBytes != got {
							t.Errorf("history costs %d bytes (Stats %d), budget %d", got, st.HistoryBytes, budgetBytes)
						}
						tagged := 0
						for _, m := range req.Messages[:len(req.Messages)-1] {
							tagged += len(m.TaggedContent())
							for _, c := range m.ToolCalls {
								tagged += len(c.Name) + len(c.Arguments)
							}
						}
						if tagged > budgetBytes {
							t.Errorf("tagged history content is %d bytes, budget %d", tagged, budgetBytes)
						}
						if st.HistoryTokens > budget && budget > 0 {
							t.Errorf("Stats.HistoryTokens = %d, budget %d", st.HistoryTokens, budget)
						}
						if st.HistoryMessages > limit {
							t.Errorf("%d history messages, limit %d", st.HistoryMessages, limit)
						}
						if st.CurrentTokens > 1000 {
							t.Errorf("current message is %d tokens, budget 1000", st.CurrentTokens)
						}
						// What is shown is the newest part of the conversation.
						if msgs := req.Messages[:len(req.Messages)-1]; len(msgs) > 1 {
							if got, want := msgs[len(msgs)-1].Role, newestRole(items); got != want {
								t.Errorf("newest history message has role %s, want %s (the newest item's)", got, want)
							}
						}
						if err := req.Validate(); err != nil {
							t.Errorf("Validate() = %v", err)
						}
					})
				}
			}
		}
	}
}

// newestRole is the role of the newest projectable item.
func newestRole(items []Item) Role {
	for i := len(items) - 1; i >= 0; i-- {
		switch items[i].Kind {
		case KindUserMessage:
			return RoleUser
		case KindAgentReply, KindToolCall:
			return RoleAssistant
		case KindToolResult:
			return RoleTool
		}
	}
	return ""
}
