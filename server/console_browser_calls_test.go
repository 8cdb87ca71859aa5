package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/a2a-gateway/gateway/tools"
)

// callsXSS is markup a caller and a model put where the call view shows text: the
// conversation's contextId, an argument's key and value (and so the peer's echo).
const callsXSS = `<script>window.__xss = 1</script><img src="x" onerror="window.__xss = 2">`

// TestConsoleBrowserCalls: a real tool run (a's model calls peer_send to b, an echo
// gateway) seen in the console's call view: from the conversation page to its calls,
// the tool by name with its arguments in a table, the outbound conversation's node
// (peer, state, latency) and a click through to it, back up to what caused it; on b, the
// hop chain its inbound message carried. Markup renders as text and runs nowhere.
func TestConsoleBrowserCalls(t *testing.T) {
	browser := newBrowser(t)
	b := startServer(t, testConfig(t)) // echo; no admin token: its console serves loopback
	script := func(results []string) (string, *fakeCall) {
		if len(results) > 0 {
			return "B answered: " + results[len(results)-1], nil
		}
		args, _ := json.Marshal(map[string]string{"target": "b", "message": "what is 2+2? " + callsXSS, callsXSS: "an extra key"})
		return "Asking b. ", &fakeCall{name: tools.ToolPeerSend, args: string(args)}
	}
	model := newFakeModel(t, "openai", script)
	cfg := llmConfig(t, "openai", model, "", Peer{Name: "b", URL: b.URL()})
	cfg.AdminToken = consoleToken
	a := startServer(t, cfg)
	ctxA := "ctx-<img src=x onerror=window.__xss=3><script>window.__xss=4</script>" // sendTextIn puts it in JSON as it is
	if _, got := sendTextIn(t, a.URL(), ctxA, "ask b"); got != ctxA {
		t.Fatalf("a answered in %q", got)
	}
	_, results := toolEntries(conversation(t, a, "local", ctxA))
	if len(results) != 1 || results[0].CorrelationID == "" {
		t.Fatalf("a's tool results: %+v, want one peer_send result linked to its outbound conversation", results)
	}
	outCtx := results[0].CorrelationID

	ctx := browserTab(t, browser)
	consoleLogin(t, ctx, a.URL())
	browse(t, ctx, "open the conversation", chromedp.Navigate(a.URL()+"console/conversation?id="+url.QueryEscape(ctxA)+"&peer=local"))
	waitJS(t, ctx, "the link to its calls", `document.getElementById("calls-link")`)
	browse(t, ctx, "open its calls", chromedp.Click(chromedp.ID("calls-link")))
	waitJS(t, ctx, "the call tree", `document.querySelector("#call-tree .tool-call")`)
	if got := evalJS[string](t, ctx, `document.querySelector("#call-tree > .node > .node-head .node-link").textContent`); got != ctxA {
		t.Errorf("the root node names %q, want %q", got, ctxA)
	}
	if got := evalJS[string](t, ctx, `document.querySelector("#call-tree .tool-call .tool-name").textContent`); got != tools.ToolPeerSend {
		t.Errorf("the tool call is named %q", got)
	}
	rows := evalJS[[][]string](t, ctx, `Array.from(document.querySelectorAll("#call-tree .tool-call table.args tbody tr")).map(r => [r.querySelector("th").textContent, r.querySelector("td").textContent])`)
	want := [][]string{{callsXSS, "an extra key"}, {"message", "what is 2+2? " + callsXSS}, {"target", "b"}}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("the argument table %q, want %q", rows, want)
	}
	out := `document.querySelector("#call-tree .tool-call .node")`
	head := evalJS[[]string](t, ctx, `(n => [n.querySelector(".node-peer").textContent, n.querySelector(".node-link").textContent, n.querySelector(".state").textContent, n.querySelector(".latency").textContent])(`+out+`)`)
	if len(head) != 4 || head[0] != "out:b@local" || head[1] != outCtx || head[2] != "completed" || !strings.HasSuffix(head[3], " ms") && !strings.HasSuffix(head[3], " s") {
		t.Errorf("the outbound node reads %q, want out:b@local, %s, completed and a latency", head, outCtx)
	}
	noScript(t, ctx, "#main")

	browse(t, ctx, "follow the call to the outbound conversation", chromedp.Click(chromedp.CSS("#call-tree .tool-call .node .node-link")))
	waitJS(t, ctx, "the outbound conversation", fmt.Sprintf(`document.querySelector("h1") && document.querySelector("h1").textContent === %q`, outCtx))
	if got := evalJS[string](t, ctx, `document.getElementById("peer").textContent`); got != "out:b@local" {
		t.Errorf("the outbound conversation's owner %q", got)
	}
	browse(t, ctx, "open the outbound conversation's calls", chromedp.Click(chromedp.ID("calls-link")))
	waitJS(t, ctx, "what caused it", `document.querySelector("#caused-by .node-link")`)
	if got := evalJS[string](t, ctx, `document.querySelector("#caused-by .node-link").textContent + " / " + document.querySelector("#caused-by .tool-name").textContent`); got != ctxA+" / peer_send" {
		t.Errorf("caused by %q, want %s / peer_send", got, ctxA)
	}
	noScript(t, ctx, "#main")

	// b holds the other side: its call view shows the chain the message came along.
	browse(t, ctx, "open b's call view", chromedp.Navigate(b.URL()+"console/calls?id="+url.QueryEscape(outCtx)+"&peer=local"))
	waitJS(t, ctx, "b's hop chain", `document.querySelector("#hops .hop")`)
	if got := evalJS[string](t, ctx, `document.querySelector("#hops .hop-url").textContent + " " + document.querySelector("#hops .hop-ctx").textContent`); !strings.HasPrefix(got, "http://127.0.0.1:") || !strings.HasSuffix(got, " "+ctxA) {
		t.Errorf("b's hop chain reads %q, want a's URL and %s", got, ctxA)
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll("#hops a").length`); n != 0 {
		t.Errorf("%d links in the hop chain, want none (those conversations are elsewhere)", n)
	}
	noScript(t, ctx, "#main")
}

// noScript fails t when the page ran a payload or holds script or img elements under sel.
func noScript(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if got := evalJS[string](t, ctx, `typeof window.__xss`); got != "undefined" {
		t.Errorf("a payload ran (window.__xss is %s)", got)
	}
	if n := evalJS[int](t, ctx, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel+" script, "+sel+" img")); n != 0 {
		t.Errorf("%d script or img elements under %s", n, sel)
	}
}
