package projection

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/redact/redacttest"
)

// credentialCorpus has one typical case per kind of credential (package redact's tests
// check the patterns; these check that Build applies them everywhere).
var credentialCorpus = redacttest.Credentials

// TestBuild_RedactsEverywhere: every kind of credential, whether in the peer's current
// message, in a prior agent reply, in a tool result or in tool-call arguments, is absent
// from every rendering.
func TestBuild_RedactsEverywhere(t *testing.T) {
	t.Parallel()
	places := []string{"current peer message", "prior peer message", "prior agent reply", "tool result", "tool arguments"}
	for _, c := range credentialCorpus {
		for _, place := range places {
			t.Run(c.Name+"/"+place, func(t *testing.T) {
				t.Parallel()
				hist := []Item{userItem(1, "first question"), replyItem(2, "first answer")}
				cur := current("what now?")
				switch place {
				case "current peer message":
					cur.Text = "my config: " + c.Text
				case "prior peer message":
					hist[0].Text = "my config: " + c.Text
				case "prior agent reply":
					hist[1].Text = "I found: " + c.Text
				case "tool result", "tool arguments":
					args := `{"path":"/etc/app.env"}`
					result := "file content:\n" + c.Text
					if place == "tool arguments" {
						args = fmt.Sprintf(`{"env": %q}`, c.Text)
						result = "ok"
					}
					hist = append(hist[:1],
						Item{Seq: 2, Kind: KindToolCall, Trust: TrustAgent, Visibility: VisibilityModel, ToolCallID: "c1", ToolName: "read", ToolArgs: args},
						Item{Seq: 3, Kind: KindToolResult, Trust: TrustPeerUntrusted, Visibility: VisibilityModel, ToolCallID: "c1", Text: result},
						replyItem(4, "first answer"))
				}
				req, st := mustBuild(t, hist, cur, Policy{HistoryLimit: 20})
				if st.Redactions == 0 {
					t.Errorf("Stats.Redactions = 0, want at least 1")
				}
				for form, out := range render(t, req).all() {
					if strings.Contains(out, c.Secret) {
						t.Errorf("%s contains the secret %q:\n%s", form, c.Secret, out)
					}
					if !strings.Contains(out, "[redacted:") {
						t.Errorf("%s has no redaction placeholder", form)
					}
				}
			})
		}
	}
}
