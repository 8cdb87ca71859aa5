package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// TestConsoleBrowserPeerTokens: on a gateway with peer tokens, the operator logged into
// the console watches alice's running turn live: the page's socket carries the console's
// session, which lets it follow alice's conversation.
func TestConsoleBrowserPeerTokens(t *testing.T) {
	browser := newBrowser(t)
	cfg := peersConfig(t)
	cfg.AdminToken = consoleToken
	ag := &scriptedAgent{gates: map[string]chan string{}}
	s := startServer(t, cfg, WithAgent(ag))
	base := s.URL()
	c := newHTTPClient(t)

	ctx := browserTab(t, browser)
	consoleLogin(t, ctx, base)
	gate := ag.gate("ctx-alice-live")
	done := make(chan httpResult, 1)
	go func() {
		done <- call(t, c, base, "Bearer "+tokAlice, false, consoleSendBody("ctx-alice-live", "stream slowly"))
	}()
	defer func() {
		if gate != nil {
			close(gate)
		}
		testutil.Receive(t, done, "alice's turn")
	}()
	testutil.WaitFor(t, "alice's turn to run", func() bool { return s.runner.Running() == 1 })
	browse(t, ctx, "open the live page", chromedp.Navigate(base+"console/live?id=ctx-alice-live&peer=alice"))
	waitJS(t, ctx, "the subscription", `document.getElementById("live-status").textContent === "connected"`)
	gate <- "one "
	waitJS(t, ctx, "alice's first chunk", fmt.Sprintf(`document.getElementById("live-text").textContent === %q`, "one "))
	close(gate)
	gate = nil
	waitJS(t, ctx, "the end of alice's turn", `document.getElementById("live-state").textContent === "TASK_STATE_COMPLETED"`)
	if got := evalJS[string](t, ctx, `document.getElementById("live-text").textContent`); got != "one " {
		t.Errorf("live text after the end %q, want %q", got, "one ")
	}
	if r := testutil.Receive(t, done, "alice's turn"); r.status != http.StatusOK {
		t.Errorf("alice's send: HTTP %d", r.status)
	}
	done <- httpResult{} // for the deferred receive
}
