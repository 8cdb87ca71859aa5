package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
)

// fakeService is a fixed conversations service.
type fakeService struct{ convs []conversations.Summary }

func (f fakeService) List(_ context.Context, opts conversations.ListOptions) (conversations.Page, error) {
	p := conversations.Page{}
	for _, c := range f.convs {
		if strings.HasPrefix(c.ContextID, opts.Prefix) && (opts.Owner == "" || opts.Owner == c.Peer) {
			p.Conversations = append(p.Conversations, c)
		}
	}
	return p, nil
}

func (f fakeService) Show(_ context.Context, ref conversations.Ref, _ conversations.ShowOptions) (conversations.ShowResult, error) {
	for _, c := range f.convs {
		if c.ContextID == ref.ContextID {
			return conversations.ShowResult{Conversation: c, Entries: []ledger.Entry{
				{Seq: 1, TaskID: "t1", Kind: ledger.KindUserMessage, Trust: "PEER_UNTRUSTED", Visibility: ledger.VisibilityModel,
					Parts: []ledger.Part{{Kind: "text", Text: "key [redacted:openai-key] <b>x</b>"}}},
				{Seq: 2, TaskID: "t1", Kind: ledger.KindAudit, Visibility: ledger.VisibilityAudit, Parts: []ledger.Part{{Kind: "text", Text: "audit-only"}}},
				{Seq: 3, TaskID: "t1", Kind: ledger.KindStatus, Visibility: ledger.VisibilityModel, State: "completed",
					Metadata: []byte(`{"prompt":{"requestBytes":1000,"requestTokens":250,"previousRequestBytes":900,"prefixReuseBytes":896,"prefixReuseTokens":224},"usage":{"inputTokens":250,"cachedTokens":200}}`)},
			}, Memory: &conversations.MemoryView{Seq: 4, First: 1, Last: 1, Summariser: "extractive", Facts: []conversations.FactView{
				{Text: "the <b>key</b> fact", Evidence: []conversations.EvidenceView{{Seq: 1, Found: true, Kind: ledger.KindUserMessage, Excerpt: "key"}, {Seq: 9}}},
			}}}, nil
		}
	}
	return conversations.ShowResult{}, &conversations.NotFoundError{ContextID: ref.ContextID}
}

func (f fakeService) Replay(context.Context, conversations.Ref, uint64) (conversations.ReplayResult, error) {
	return conversations.ReplayResult{}, errors.New("no replay")
}

func (f fakeService) Verify(context.Context, conversations.Ref) (conversations.VerifyReport, error) {
	return conversations.VerifyReport{Checked: 1, OK: true}, nil
}

// xssPayload is markup a peer or a model could put in a name or an argument.
const xssPayload = `<script>alert(1)</script><img src=x onerror=alert(2)>`

func (f fakeService) Calls(_ context.Context, ref conversations.Ref) (conversations.CallTree, error) {
	if ref.ContextID != "ctx-a" {
		return conversations.CallTree{}, &conversations.NotFoundError{ContextID: ref.ContextID}
	}
	out := &conversations.CallNode{Peer: "out:" + xssPayload, ContextID: "ctx-out-" + xssPayload, Held: true, State: "completed", LatencyMS: 1234.5}
	return conversations.CallTree{Root: conversations.CallNode{Peer: "local", ContextID: "ctx-a", Held: true, State: "completed", LatencyMS: 12.25,
		Calls: []conversations.ToolCall{{EntryID: "e1", Name: "peer_send", Outcome: "ok", Result: "reply " + xssPayload,
			Args: []conversations.Arg{{Key: "target", Value: "b"}, {Key: xssPayload, Value: "say " + xssPayload + " [redacted:github-token]"}}, Outbound: out},
			{EntryID: "e2", Name: "peer_send", Outcome: "ok", Outbound: &conversations.CallNode{Peer: "out:c@local", ContextID: "gone"}}}},
		Hop: 1, Hops: []a2a.HopLink{{URL: "https://gw.example/" + xssPayload, ContextID: "ctx-gw"}}}, nil
}

var convs = []conversations.Summary{
	{ContextID: "ctx-a", Peer: "local", Turns: 1, CreatedAt: time.Unix(1, 0)},
	{ContextID: "<script>alert(1)</script>", Peer: "local"},
}

func newServer(t *testing.T, token string) *httptest.Server {
	t.Helper()
	h, err := New(Config{Service: fakeService{convs: convs}, AdminToken: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// client returns a client with a cookie jar that does not follow redirects.
func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf token in the page:\n%s", body)
	}
	return m[1]
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "")
	for _, path := range []string{"/console/", "/console/login", "/console/static/live.js", "/console/nope", "/console/conversation?id=ctx-a"} {
		resp, _ := get(t, client(t), srv.URL+path)
		if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") || strings.Contains(got, "unsafe-inline") || !strings.Contains(got, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, got)
		}
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s: X-Frame-Options %q", path, got)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", path, got)
		}
	}
}

func TestLoginSessionAndThrottle(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "s3cret")
	c := client(t)
	if resp, _ := get(t, c, srv.URL+"/console/"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
		t.Fatalf("without a session: %d %q, want 303 to the login page", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, body := get(t, c, srv.URL+"/console/login")
	csrf := csrfOf(t, body)
	if resp, _ := post(t, c, srv.URL+"/console/login", url.Values{"token": {"s3cret"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login without the CSRF token: %d, want 403", resp.StatusCode)
	}
	if resp, _ := post(t, c, srv.URL+"/console/login", url.Values{"token": {"s3cret"}, "csrf": {csrf + "x"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login with a wrong CSRF token: %d, want 403", resp.StatusCode)
	}
	for i := range maxFails {
		if resp, _ := post(t, c, srv.URL+"/console/login", url.Values{"token": {"wrong"}, "csrf": {csrf}}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i, resp.StatusCode)
		}
	}
	if resp, _ := post(t, c, srv.URL+"/console/login", url.Values{"token": {"s3cret"}, "csrf": {csrf}}); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after %d wrong tokens: %d, want 429 even for the right one", maxFails, resp.StatusCode)
	}
	// A fresh handler (no failures yet) logs in and sets the cookie as it should.
	srv = newServer(t, "s3cret")
	c = client(t)
	_, body = get(t, c, srv.URL+"/console/login")
	resp, _ := post(t, c, srv.URL+"/console/login", url.Values{"token": {"s3cret"}, "csrf": {csrfOf(t, body)}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	var sess *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			sess = ck
		}
	}
	if sess == nil {
		t.Fatal("no session cookie")
	}
	got := [4]any{sess.HttpOnly, sess.SameSite, sess.Path, sess.Secure}
	if diff := cmp.Diff([4]any{true, http.SameSiteStrictMode, "/console", false}, got); diff != "" {
		t.Errorf("session cookie (HttpOnly, SameSite, Path, Secure over http) (-want +got):\n%s", diff)
	}
	if resp, body := get(t, c, srv.URL+"/console/"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "ctx-a") {
		t.Fatalf("with the session: %d", resp.StatusCode)
	}
	if resp, _ := get(t, client(t), srv.URL+"/console/", "Authorization", "Bearer s3cret"); resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token as a bearer: %d", resp.StatusCode)
	}
}

func TestSecureCookieBehindHTTPS(t *testing.T) {
	t.Parallel()
	h, err := New(Config{Service: fakeService{}, AdminToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://gw.example/console/login", nil))
	for _, ck := range rec.Result().Cookies() {
		if !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
			t.Errorf("cookie %s over https: Secure %v HttpOnly %v SameSite %v", ck.Name, ck.Secure, ck.HttpOnly, ck.SameSite)
		}
	}
	if len(rec.Result().Cookies()) == 0 {
		t.Fatal("the login page set no CSRF cookie")
	}
}

func TestNoTokenLoopbackOnly(t *testing.T) {
	t.Parallel()
	h, err := New(Config{Service: fakeService{convs: convs}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		remote string
		want   int
	}{{"127.0.0.1:5000", http.StatusOK}, {"[::1]:5000", http.StatusOK}, {"192.0.2.7:5000", http.StatusForbidden}} {
		req := httptest.NewRequest(http.MethodGet, "/console/", nil)
		req.RemoteAddr = tc.remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("from %s: %d, want %d", tc.remote, rec.Code, tc.want)
		}
	}
}

func TestVerifyNeedsCSRF(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "")
	c := client(t)
	_, body := get(t, c, srv.URL+"/console/conversation?id=ctx-a")
	csrf := csrfOf(t, body)
	if resp, _ := post(t, c, srv.URL+"/console/verify?id=ctx-a", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("verify without CSRF: %d, want 403", resp.StatusCode)
	}
	if resp, _ := post(t, client(t), srv.URL+"/console/verify?id=ctx-a", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("verify with a token but without its cookie: %d, want 403", resp.StatusCode)
	}
	resp, body := post(t, c, srv.URL+"/console/verify?id=ctx-a", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Chain intact.") {
		t.Fatalf("verify: %d\n%s", resp.StatusCode, body)
	}
}

func TestPagesEscapeAndMarkRedactions(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "")
	_, body := get(t, client(t), srv.URL+"/console/")
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("list page does not escape a contextId:\n%s", body)
	}
	// The links carry the contextId escaped once: following them finds the conversation.
	href := regexp.MustCompile(`href="(/console/conversation\?id=%3c[^"]*)"`).FindStringSubmatch(body)
	if href == nil {
		t.Fatalf("no link to the markup conversation:\n%s", body)
	}
	link := strings.ReplaceAll(href[1], "&amp;", "&")
	resp, page := get(t, client(t), srv.URL+link)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("following %s: %d", link, resp.StatusCode)
	}
	replay := regexp.MustCompile(`href="/console/replay\?([^"]*)"`).FindStringSubmatch(page)
	if replay == nil {
		t.Fatalf("no replay link:\n%s", page)
	}
	if q, err := url.ParseQuery(strings.ReplaceAll(replay[1], "&amp;", "&")); err != nil || q.Get("id") != "<script>alert(1)</script>" || q.Get("peer") != "local" {
		t.Errorf("replay link query %q: %v", replay[1], q)
	}
	_, body = get(t, client(t), srv.URL+"/console/conversation?id=ctx-a")
	if !strings.Contains(body, `<mark class="redacted" title="redacted credential">[redacted:openai-key]</mark>`) || !strings.Contains(body, "&lt;b&gt;x&lt;/b&gt;") {
		t.Errorf("timeline: no redaction marker or unescaped text:\n%s", body)
	}
	if strings.Contains(body, "audit-only") {
		t.Error("an AUDIT_ONLY entry is shown without the toggle")
	}
	_, body = get(t, client(t), srv.URL+"/console/conversation?id=ctx-a&audit=1")
	if !strings.Contains(body, "audit-only") {
		t.Error("an AUDIT_ONLY entry is hidden with the toggle on")
	}
	if resp, _ := get(t, client(t), srv.URL+"/console/conversation?id=nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown conversation: %d, want 404", resp.StatusCode)
	}
}

func TestSegments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []segment
	}{
		{"", nil},
		{"plain", []segment{{Text: "plain"}}},
		{"a [redacted:x] b", []segment{{Text: "a "}, {Text: "[redacted:x]", Redacted: true}, {Text: " b"}}},
		{"[redacted:x][redacted:y]", []segment{{Text: "[redacted:x]", Redacted: true}, {Text: "[redacted:y]", Redacted: true}}},
		{"open [redacted:x", []segment{{Text: "open [redacted:x"}}},
	} {
		if diff := cmp.Diff(tc.want, segments(tc.in)); diff != "" {
			t.Errorf("segments(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func httpRequest(path string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = "127.0.0.1:4000"
	return req
}

func recorder(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestConversationMemoryAndFigures: the conversation page shows the memory snapshot with
// each fact's evidence linked to its entry in the timeline (a missing one marked), and
// each turn's prefix reuse and provider cache figures (issue #38).
func TestConversationMemoryAndFigures(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "")
	_, body := get(t, client(t), srv.URL+"/console/conversation?id=ctx-a")
	for _, want := range []string{
		`<section id="memory" class="memory">`,
		`the &lt;b&gt;key&lt;/b&gt; fact`,
		`<a class="evidence-link" href="#seq-1" title="USER_MESSAGE: key">#1</a>`,
		`<span class="evidence-missing">#9 (missing)</span>`,
		`<span class="seq" id="seq-1">#1</span>`,
		`prefix reuse 99% (896 of 900 B, ~224 tokens)`,
		`provider cached 200 of 250 tokens`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("conversation page lacks %s:\n%s", want, body)
		}
	}
}
