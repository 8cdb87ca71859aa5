package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// The operator console in a real headless Chromium (Debian's chromium package;
// scripts/ensure-chromium.sh installs it as root). One browser for the test binary:
// TestConsoleBrowser starts it and runs every browser check as a subtest, each in its own
// tab with a bounded context.

const consoleToken = "console-admin-token-for-tests"

// chromiumPath finds the browser, or "" (GATEWAY_TEST_CHROMIUM overrides).
func chromiumPath() string {
	if p := os.Getenv("GATEWAY_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// scriptedAgent echoes, except in the contexts it has a channel for: there it emits each
// string it receives as a chunk, and ends the reply when the channel is closed.
type scriptedAgent struct {
	mu    sync.Mutex
	gates map[string]chan string
}

func (a *scriptedAgent) gate(contextID string) chan string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(chan string)
	a.gates[contextID] = ch
	return ch
}

func (a *scriptedAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	a.mu.Lock()
	ch, ok := a.gates[t.ContextID]
	a.mu.Unlock()
	if !ok {
		return agent.Result{}, emit("echo: " + t.Text)
	}
	for {
		select {
		case c, more := <-ch:
			if !more {
				return agent.Result{}, nil
			}
			if err := emit(c); err != nil {
				return agent.Result{}, err
			}
		case <-ctx.Done():
			return agent.Result{}, ctx.Err()
		}
	}
}

// consoleFixture is a gateway with the console's conversations made through real sends.
type consoleFixture struct {
	s     *Server
	agent *scriptedAgent
	send  func(contextID, text string) rpcResponse
}

func consoleSendBody(contextID, text string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-%d","contextId":%q,"parts":[{"kind":"text","text":%s}]}}}`,
		time.Now().UnixNano(), contextID, b)
}

// newConsoleFixture starts the gateway and makes three conversations: one with a
// credential (redacted), one with a busy rejection (an AUDIT_ONLY entry), one whose
// message is markup.
func newConsoleFixture(t *testing.T) *consoleFixture {
	t.Helper()
	cfg := testConfig(t)
	cfg.AdminToken = consoleToken
	ag := &scriptedAgent{gates: map[string]chan string{}}
	s := startServer(t, cfg, WithAgent(ag))
	c := newHTTPClient(t)
	f := &consoleFixture{s: s, agent: ag, send: func(contextID, text string) rpcResponse {
		return postRPC(t, c, s.URL(), false, consoleSendBody(contextID, text))
	}}
	f.send("ctx-redact-1", "here is my token ghp_abcdefghijklmnopqrstuvwxyz0123456789 keep it safe")
	f.send("ctx-xss-1", `<script>window.__xss = 1</script><img src="x" onerror="window.__xss = 2">`)

	gate := ag.gate("ctx-busy-1")
	done := make(chan rpcResponse, 1)
	go func() { done <- f.send("ctx-busy-1", "a slow turn") }() // ends when gate closes
	testutil.WaitFor(t, "the slow turn to run", func() bool { return s.runner.Running() == 1 })
	if r := f.send("ctx-busy-1", "while it runs"); r.Error == nil || r.Error.Code != -32004 {
		t.Fatalf("second send into a running context: %+v, want CONTEXT_BUSY (-32004)", r.Error)
	}
	close(gate)
	if r := testutil.Receive(t, done, "the slow turn's answer"); r.Error != nil {
		t.Fatalf("slow turn: %+v", r.Error)
	}
	svc := s.adminService()
	testutil.WaitFor(t, "the busy rejection's audit entry", func() bool {
		res, err := svc.Show(t.Context(), conversations.Ref{ContextID: "ctx-busy-1"}, conversations.ShowOptions{All: true})
		return err == nil && len(res.Entries) > res.Conversation.Entries-1 && hasAudit(res)
	})
	return f
}

func hasAudit(res conversations.ShowResult) bool {
	for _, e := range res.Entries {
		if e.Visibility == "AUDIT_ONLY" {
			return true
		}
	}
	return false
}

// newBrowser starts the one headless Chromium of the test, with a fresh profile; it is
// stopped (and its profile removed) at cleanup.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		testutil.Unavailable(t, testutil.DepChromium, "chromium not found: the console's browser tests need Debian's chromium package "+
			"(scripts/ensure-chromium.sh installs it as root; or apt-get install chromium), or GATEWAY_TEST_CHROMIUM=/path/to/chrome")
		return nil
	}
	dir, err := os.MkdirTemp("", "console-chromium-*")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.UserDataDir(dir),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-proxy-server", true), chromedp.NoFirstRun)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
		// Its helpers may write to the profile a moment longer: remove until it goes.
		testutil.Until(time.Now().Add(10*time.Second), func() bool { return os.RemoveAll(dir) == nil })
	})
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1`)); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	return ctx
}

// browserTab opens a new tab of the browser for t, bounded (generously: a subtest of many
// steps took 18 s of a former 20 s bound under make test-load); on failure it saves a
// screenshot and names the file.
func browserTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	tabCtx, cancelTab := chromedp.NewContext(browser)
	ctx, cancel := context.WithTimeout(tabCtx, 90*time.Second)
	t.Cleanup(func() {
		defer cancelTab()
		defer cancel()
		if !t.Failed() {
			return
		}
		sctx, scancel := context.WithTimeout(tabCtx, 5*time.Second)
		defer scancel()
		png, err := chromedp.Run(sctx, chromedp.FullScreenshot(90))
		if err != nil {
			t.Logf("screenshot: %v", err)
			return
		}
		dir, err := os.MkdirTemp("", "console-failure-*") // kept: the test's own temp dir goes at cleanup
		if err == nil {
			name := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".jpg")
			if err = os.WriteFile(name, png, 0o600); err == nil {
				t.Logf("screenshot of the failure: %s", name)
			}
		}
		if err != nil {
			t.Logf("screenshot: %v", err)
		}
	})
	return ctx
}

// browse runs the actions, failing t with what they were for.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// evalJS evaluates a JavaScript expression in the page.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS polls a JavaScript predicate in the page until it holds (an evaluation that
// fails, as during a navigation, counts as false).
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	ok := testutil.Until(time.Now().Add(15*time.Second), func() bool {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+expr+`)`))
		return err == nil && v
	})
	if !ok {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		t.Fatalf("waiting for %s (%s)\npage text:\n%s", what, expr, text)
	}
}

// consoleLogin logs in through the form, unless the browser has a session already.
func consoleLogin(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	browse(t, ctx, "open the console", chromedp.Navigate(base+"console/"))
	waitJS(t, ctx, "the login form or the list", `document.getElementById("token") || document.getElementById("conversations")`)
	if evalJS[bool](t, ctx, `!!document.getElementById("conversations")`) {
		return
	}
	browse(t, ctx, "log in",
		chromedp.SendKeys(chromedp.ID("token"), consoleToken),
		chromedp.Click(chromedp.ID("login-submit")))
	waitJS(t, ctx, "the conversations list", `document.getElementById("conversations")`)
}

func TestConsoleBrowser(t *testing.T) {
	browser := newBrowser(t)
	f := newConsoleFixture(t)
	base := f.s.URL()

	t.Run("login page only without the token; a wrong token is refused", func(t *testing.T) {
		ctx := browserTab(t, browser)
		browse(t, ctx, "open the console", chromedp.Navigate(base+"console/"))
		waitJS(t, ctx, "the login form", `document.getElementById("login")`)
		if got := evalJS[string](t, ctx, `location.pathname`); got != "/console/login" {
			t.Fatalf("without a session the console shows %s, want /console/login", got)
		}
		browse(t, ctx, "log in with a wrong token",
			chromedp.SendKeys(chromedp.ID("token"), "not-the-token"),
			chromedp.Click(chromedp.ID("login-submit")))
		waitJS(t, ctx, "the refusal", `document.getElementById("login-error")`)
		if got := evalJS[string](t, ctx, `document.getElementById("login-error").textContent`); got != "Wrong token." {
			t.Errorf("login error %q", got)
		}
		if got := evalJS[string](t, ctx, `(document.getElementById("login-throttle") || {}).textContent || ""`); !strings.Contains(got, "the right one included") {
			t.Errorf("the login page does not say a lockout holds the right token too: %q", got)
		}
	})

	t.Run("find a conversation by prefix, open it, redaction marker, audit toggle, verify", func(t *testing.T) {
		ctx := browserTab(t, browser)
		consoleLogin(t, ctx, base)
		waitJS(t, ctx, "the three conversations", `document.querySelectorAll("#conversations tr.conv").length === 3`)
		browse(t, ctx, "search by prefix",
			chromedp.SendKeys(chromedp.ID("prefix"), "ctx-red"),
			chromedp.Click(chromedp.ID("search")))
		waitJS(t, ctx, "one match", `location.search.includes("prefix=ctx-red") && document.querySelectorAll("#conversations tr.conv").length === 1`)
		browse(t, ctx, "open it", chromedp.Click(chromedp.CSS(`#conversations a.ctx`)))
		waitJS(t, ctx, "the conversation page", `document.getElementById("timeline")`)
		if got := evalJS[string](t, ctx, `document.querySelector("h1").textContent`); got != "ctx-redact-1" {
			t.Fatalf("opened %q", got)
		}
		marker := evalJS[string](t, ctx, `(document.querySelector(".entry.kind-USER_MESSAGE mark.redacted") || {}).textContent || ""`)
		if marker != "[redacted:github-token]" {
			t.Errorf("redaction marker %q, want [redacted:github-token]", marker)
		}
		if text := evalJS[string](t, ctx, `document.getElementById("timeline").textContent`); strings.Contains(text, "ghp_abc") {
			t.Errorf("the timeline shows the credential")
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll(".entry.kind-AGENT_REPLY").length`); n != 1 {
			t.Errorf("%d agent replies in the timeline, want 1", n)
		}
		if out := os.Getenv("GATEWAY_CONSOLE_SCREENSHOT"); out != "" { // docs/console.png: make console-screenshot
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(out, png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		browse(t, ctx, "verify the chain", chromedp.Click(chromedp.CSS(`#verify button`)))
		waitJS(t, ctx, "the chain status", `document.getElementById("verify-result")`)
		if got := evalJS[string](t, ctx, `document.getElementById("verify-result").textContent`); got != "Chain intact." {
			t.Errorf("verify: %q", got)
		}

		browse(t, ctx, "open the busy conversation", chromedp.Navigate(base+"console/conversation?id=ctx-busy-1"))
		waitJS(t, ctx, "the busy conversation", `document.querySelector("h1").textContent === "ctx-busy-1"`)
		if n := evalJS[int](t, ctx, `document.querySelectorAll(".entry.audit").length`); n != 0 {
			t.Errorf("%d audit entries shown before the toggle", n)
		}
		browse(t, ctx, "toggle audit entries", chromedp.Click(chromedp.ID("toggle-audit")))
		waitJS(t, ctx, "the audit entries", `document.querySelectorAll(".entry.audit").length > 0`)
		if got := evalJS[string](t, ctx, `document.querySelector(".entry.audit .visibility").textContent`); got != "AUDIT_ONLY" {
			t.Errorf("audit entry visibility %q", got)
		}
		browse(t, ctx, "toggle them off", chromedp.Click(chromedp.ID("toggle-audit")))
		waitJS(t, ctx, "no audit entries", `document.getElementById("timeline") && document.querySelectorAll(".entry.audit").length === 0 && !location.search.includes("audit=1")`)
		if n := evalJS[int](t, ctx, `document.querySelectorAll(".task-boundary").length`); n < 1 {
			t.Errorf("no task boundary in the timeline")
		}
	})

	t.Run("a peer's markup renders as text", func(t *testing.T) {
		ctx := browserTab(t, browser)
		consoleLogin(t, ctx, base)
		browse(t, ctx, "open the markup conversation", chromedp.Navigate(base+"console/conversation?id=ctx-xss-1"))
		waitJS(t, ctx, "the timeline", `document.querySelector(".entry.kind-USER_MESSAGE .text")`)
		text := evalJS[string](t, ctx, `document.querySelector(".entry.kind-USER_MESSAGE .text").textContent`)
		if !strings.Contains(text, "<script>window.__xss = 1</script>") || !strings.Contains(text, `<img src="x"`) {
			t.Errorf("the message text is %q, want the markup as text", text)
		}
		if got := evalJS[string](t, ctx, `typeof window.__xss`); got != "undefined" {
			t.Errorf("the peer's script ran (window.__xss is %s)", got)
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll("#timeline script, #timeline img").length`); n != 0 {
			t.Errorf("%d script or img elements in the timeline", n)
		}
	})

	t.Run("what the agent saw", func(t *testing.T) {
		ctx := browserTab(t, browser)
		consoleLogin(t, ctx, base)
		browse(t, ctx, "open the conversation", chromedp.Navigate(base+"console/conversation?id=ctx-redact-1"))
		waitJS(t, ctx, "the timeline", `document.querySelector(".entry.kind-USER_MESSAGE a.replay")`)
		browse(t, ctx, "open what the agent saw", chromedp.Click(chromedp.CSS(".entry.kind-USER_MESSAGE a.replay")))
		waitJS(t, ctx, "the replay", `document.getElementById("prompt")`)
		want, err := f.s.adminService().Replay(t.Context(), conversations.Ref{ContextID: "ctx-redact-1"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := evalJS[string](t, ctx, `document.getElementById("prompt").textContent`); got != want.Prompt {
			t.Errorf("prompt in the page:\n%q\nwant (conversations replay):\n%q", got, want.Prompt)
		}
		if got := evalJS[string](t, ctx, `document.getElementById("system").textContent`); got != want.Request.System || got == "" {
			t.Errorf("instruction stack %q, want %q", got, want.Request.System)
		}
	})

	t.Run("live reply chunk by chunk, across a reconnect", func(t *testing.T) {
		ctx := browserTab(t, browser)
		consoleLogin(t, ctx, base)
		gate := f.agent.gate("ctx-live-1")
		done := make(chan rpcResponse, 1)
		go func() { done <- f.send("ctx-live-1", "stream slowly") }() // ends when gate closes
		defer func() {
			if gate != nil {
				close(gate)
			}
			testutil.Receive(t, done, "the live turn's answer")
		}()
		testutil.WaitFor(t, "the live turn to run", func() bool { return f.s.runner.Running() == 1 })
		browse(t, ctx, "list running conversations", chromedp.Navigate(base+"console/?state=running"))
		waitJS(t, ctx, "the running conversation", `document.querySelectorAll("#conversations tr.conv").length === 1`)
		if got := evalJS[string](t, ctx, `document.querySelector("#conversations tr.conv a.ctx").textContent + " " + document.querySelector("#conversations tr.conv .for").textContent`); !strings.HasPrefix(got, "ctx-live-1 (for ") {
			t.Errorf("running conversations: %q, want ctx-live-1 with how long it has run", got)
		}
		browse(t, ctx, "open the live page", chromedp.Navigate(base+"console/live?id=ctx-live-1"))
		waitJS(t, ctx, "the subscription", `document.getElementById("live-status").textContent === "connected"`)
		want := ""
		for i, chunk := range []string{"one ", "two ", "three ", "four "} {
			if i == 2 {
				evalJS[bool](t, ctx, `window.consoleLiveDrop(), true`) // a lost connection: the page resumes
			}
			gate <- chunk
			want += chunk
			waitJS(t, ctx, fmt.Sprintf("chunk %d", i+1), fmt.Sprintf(`document.getElementById("live-text").textContent === %q`, want))
		}
		close(gate)
		gate = nil
		waitJS(t, ctx, "the end of the turn", `document.getElementById("live-state").textContent === "TASK_STATE_COMPLETED"`)
		if got := evalJS[string](t, ctx, `document.getElementById("live-text").textContent`); got != want {
			t.Errorf("live text after the end %q, want %q (no gap, no duplicate)", got, want)
		}
		if got := evalJS[string](t, ctx, `document.getElementById("live").dataset.connects`); got != "2" {
			t.Errorf("the page connected %s times, want 2 (one reconnect)", got)
		}
	})

	t.Run("a tool call by name, and from peer_send to the outbound conversation", func(t *testing.T) {
		// A gateway whose model calls peer_send to b (an echo gateway): a real tool run.
		b := startServer(t, testConfig(t))
		model := newFakeModel(t, "openai", askPeer("b", "what is <b>2+2</b>?\nquick", "B answered: "))
		cfg := llmConfig(t, "openai", model, "", Peer{Name: "b", URL: b.URL()})
		cfg.AdminToken = consoleToken
		a := startServer(t, cfg)
		_, ctxA := sendText(t, a.URL(), "ask b what 2+2 is")
		_, results := toolEntries(conversation(t, a, "local", ctxA))
		if len(results) != 1 || results[0].CorrelationID == "" {
			t.Fatalf("A's tool results: %+v, want one peer_send result linked to its outbound conversation", results)
		}
		outCtx := results[0].CorrelationID

		ctx := browserTab(t, browser)
		consoleLogin(t, ctx, a.URL())
		browse(t, ctx, "open the conversation", chromedp.Navigate(a.URL()+"console/conversation?id="+url.QueryEscape(ctxA)+"&peer=local"))
		waitJS(t, ctx, "the tool call", `document.querySelector(".entry.kind-TOOL_CALL .tool")`)
		line := `document.querySelector(".entry.kind-%s .tool").textContent.replace(/\s+/g, " ").trim()`
		if got, want := evalJS[string](t, ctx, fmt.Sprintf(line, "TOOL_CALL")), `peer_send → b: "what is <b>2+2</b>?\nquick" conversation with b: `+outCtx; got != want {
			t.Errorf("the tool call reads %q, want %q", got, want)
		}
		if got, want := evalJS[string](t, ctx, fmt.Sprintf(line, "TOOL_RESULT")), "peer_send ok conversation with b: "+outCtx; got != want {
			t.Errorf("the tool result reads %q, want %q", got, want)
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll("#timeline b").length`); n != 0 {
			t.Errorf("%d <b> elements in the timeline: the arguments' markup was not escaped", n)
		}
		browse(t, ctx, "follow the tool call to the outbound conversation", chromedp.Click(chromedp.CSS(".entry.kind-TOOL_CALL a.outbound")))
		waitJS(t, ctx, "the outbound conversation", fmt.Sprintf(`document.querySelector("h1").textContent === %q`, outCtx))
		if got := evalJS[string](t, ctx, `document.getElementById("peer").textContent`); got != "out:b@local" {
			t.Errorf("the outbound conversation's owner %q, want out:b@local (the tools of a local turn)", got)
		}
		texts := evalJS[[]string](t, ctx, `Array.from(document.querySelectorAll("#timeline .entry .text")).map(e => e.textContent)`)
		if len(texts) < 2 || texts[0] != "what is <b>2+2</b>?\nquick" || texts[1] != "echo: what is <b>2+2</b>?\nquick" {
			t.Errorf("the outbound conversation's texts %q, want the message and b's echo", texts)
		}
		// And back: the outbound message links to the tool call that sent it.
		browse(t, ctx, "follow the outbound message back to its tool call", chromedp.Click(chromedp.CSS(".entry.kind-USER_MESSAGE a.origin")))
		waitJS(t, ctx, "the calling conversation", fmt.Sprintf(`document.querySelector("h1").textContent === %q`, ctxA))
		if got := evalJS[string](t, ctx, `location.hash && document.querySelector(location.hash).className`); !strings.Contains(got, "kind-TOOL_CALL") {
			t.Errorf("the origin link's anchor names an entry of class %q, want the TOOL_CALL", got)
		}
	})

	t.Run("health numbers", func(t *testing.T) {
		ctx := browserTab(t, browser)
		consoleLogin(t, ctx, base)
		browse(t, ctx, "open health", chromedp.Navigate(base+"console/health"))
		waitJS(t, ctx, "the numbers", `document.getElementById("numbers")`)
		if got := evalJS[string](t, ctx, `document.getElementById("busy").textContent`); got != "1" {
			t.Errorf("busy rejections %q, want 1", got)
		}
		if got := evalJS[string](t, ctx, `document.getElementById("commits").textContent`); got == "0" || got == "" {
			t.Errorf("ledger commits %q, want some", got)
		}
		if got := evalJS[string](t, ctx, `document.getElementById("appends-per-commit").textContent`); got == "0.00" {
			t.Errorf("appends per commit %q", got)
		}
	})
}
