package console

import (
	"html"
	"net/http"
	"strings"
	"testing"
)

func TestCallsPage(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "")
	resp, body := get(t, client(t), srv.URL+"/console/calls?id=ctx-a&peer=local")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /console/calls: %d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{
		`<span class="tool-name">peer_send</span>`,
		`<th scope="row" class="arg-key">target</th><td class="arg-value">b</td>`,
		`<span class="state">completed</span>`, `<span class="latency">12.2 ms</span>`, `<span class="latency">1.23 s</span>`,
		`<a class="node-link" href="/console/conversation?id=ctx-a&amp;peer=local">ctx-a</a>`,
		`<span class="node-ctx">gone</span> <span class="node-missing">not held here</span>`,
		`<mark class="redacted" title="redacted credential">[redacted:github-token]</mark>`,
		`<a id="conversation-link" href="/console/conversation?id=ctx-a&amp;peer=local">`,
		html.EscapeString(xssPayload),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the calls page lacks %s", want)
		}
	}
	if strings.Contains(body, xssPayload) || strings.Contains(body, "<img") || strings.Count(body, "<script") != 0 {
		t.Errorf("the calls page holds unescaped markup:\n%s", body)
	}
	// The outbound node's link escapes its id and peer as query values.
	if !strings.Contains(body, `href="/console/conversation?id=ctx-out-%3Cscript%3Ealert%281%29%3C%2Fscript%3E%3Cimg&#43;src%3Dx&#43;onerror%3Dalert%282%29%3E&amp;peer=out%3A%3Cscript`) {
		t.Errorf("the outbound node's link is not query-escaped:\n%s", body)
	}
	if resp, _ := get(t, client(t), srv.URL+"/console/calls?id=nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown conversation's calls: %d, want 404", resp.StatusCode)
	}
	if _, body := get(t, client(t), srv.URL+"/console/conversation?id=ctx-a"); !strings.Contains(body, `<a id="calls-link" href="/console/calls?id=ctx-a&amp;peer=local">Calls</a>`) {
		t.Errorf("the conversation page has no link to its calls")
	}
}
