package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/conversations"
)

// Inbound tokens of the test peers; alice has two (rotation).
const (
	tokAlice    = "alice-token-0001-abcdefghijkl"
	tokAliceNew = "alice-token-0002-rotated-mnop"
	tokBob      = "bob-token-0001-qrstuvwxyzabcd"
)

// peersConfig is testConfig with peers alice (two accept tokens) and bob.
func peersConfig(t *testing.T) Config {
	t.Helper()
	cfg := testConfig(t)
	cfg.Peers = []Peer{
		{Name: "alice", Accept: []string{tokAlice, tokAliceNew}},
		{Name: "bob", Accept: []string{tokBob}},
		{Name: "upstream", URL: "http://127.0.0.1:1/", Token: "outbound-only-token"}, // called by us only
	}
	return cfg
}

// httpResult is a raw HTTP exchange.
type httpResult struct {
	status int
	header http.Header
	body   []byte
}

// call POSTs a JSON-RPC body with "Authorization: <auth>" (none when auth is "") and
// reads the whole response (an SSE stream included).
func call(t *testing.T, c *http.Client, url, auth string, v1 bool, body string) httpResult {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if v1 {
		req.Header.Set("A2A-Version", "1.0")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: b}
}

// rpc is call for a unary method: HTTP 200 and a JSON-RPC response required.
func rpc(t *testing.T, c *http.Client, url, token string, v1 bool, body string) rpcResponse {
	t.Helper()
	res := call(t, c, url, "Bearer "+token, v1, body)
	if res.status != http.StatusOK {
		t.Fatalf("POST status = %d, want 200; body %s", res.status, res.body)
	}
	var out rpcResponse
	if err := json.Unmarshal(res.body, &out); err != nil {
		t.Fatalf("response %s: %v", res.body, err)
	}
	return out
}

// owners returns the peers owning a conversation with contextID, from the admin API.
func owners(t *testing.T, c *http.Client, s *Server, contextID string) []string {
	t.Helper()
	resp := adminGet(t, c, s, "admin/v1/conversations", s.localToken)
	defer resp.Body.Close()
	var list struct {
		Conversations []conversations.Summary `json:"conversations"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("admin list: status %d, %v", resp.StatusCode, err)
	}
	var out []string
	for _, cv := range list.Conversations {
		if cv.ContextID == contextID {
			out = append(out, cv.Peer)
		}
	}
	slices.Sort(out)
	return out
}

// sendBody is a v0.3 message/send or message/stream request; extra is spliced into the
// params (after the message) and meta into the message's metadata.
func sendBody(stream bool, contextID, text, extra, meta string) string {
	method := "message/send"
	if stream {
		method = "message/stream"
	}
	if meta == "" {
		meta = "{}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":{"kind":"message","role":"user","messageId":"m-%s","contextId":%q,"metadata":%s,"parts":[{"kind":"text","text":%q}]}%s}}`,
		method, contextID, contextID, meta, text, extra)
}

// TestPeerAuth: over JSON and SSE, a request is served as the peer whose token it
// carries (rotated tokens included), and refused with 401 and a Bearer challenge
// otherwise; identity claims in the body have no effect.
func TestPeerAuth(t *testing.T) {
	s := startServer(t, peersConfig(t))
	c := newHTTPClient(t)
	claimAlice := `,"peer":"alice","owner":"alice","metadata":{"peer":"alice","owner":"alice","token":"` + tokAlice + `"}`
	metaAlice := `{"peer":"alice","owner":"alice","authorization":"Bearer ` + tokAlice + `"}`
	tests := []struct {
		name      string
		auth      string // the Authorization header
		extra     string // added to params
		meta      string // message metadata
		wantPeer  string // "" = 401
		wantCause string // auth failure reason counted when refused
	}{
		{name: "no token", wantCause: "missing"},
		{name: "wrong token", auth: "Bearer not-a-configured-token-at-all", wantCause: "invalid"},
		{name: "prefix of a token", auth: "Bearer " + tokAlice[:len(tokAlice)-1], wantCause: "invalid"},
		{name: "outbound token is not accepted", auth: "Bearer outbound-only-token", wantCause: "invalid"},
		{name: "basic scheme", auth: "Basic " + tokAlice, wantCause: "missing"},
		{name: "scheme only", auth: "Bearer", wantCause: "missing"},
		{name: "token only in the body", extra: claimAlice, meta: metaAlice, wantCause: "missing"},
		{name: "alice", auth: "Bearer " + tokAlice, wantPeer: "alice"},
		{name: "alice rotated token", auth: "Bearer " + tokAliceNew, wantPeer: "alice"},
		{name: "bob, lowercase scheme", auth: "bearer " + tokBob, wantPeer: "bob"},
		{name: "bob claiming alice in the body", auth: "Bearer " + tokBob, extra: claimAlice, meta: metaAlice, wantPeer: "bob"},
	}
	wantFailures := map[string]float64{}
	for i, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name + "/send"
			if stream {
				name = tt.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				contextID := fmt.Sprintf("auth-%d-%v", i, stream)
				res := call(t, c, s.URL(), tt.auth, false, sendBody(stream, contextID, "hi", tt.extra, tt.meta))
				if tt.wantPeer == "" {
					wantFailures[tt.wantCause]++
					if res.status != http.StatusUnauthorized {
						t.Fatalf("status = %d, want 401; body %s", res.status, res.body)
					}
					if got := res.header.Get("WWW-Authenticate"); got != `Bearer realm="a2a-gateway"` {
						t.Errorf("WWW-Authenticate = %q, want %q", got, `Bearer realm="a2a-gateway"`)
					}
					if string(res.body) != "unauthorized\n" {
						t.Errorf("401 body = %q, want the generic line only", res.body)
					}
					if got := owners(t, c, s, contextID); len(got) != 0 {
						t.Errorf("refused request stored a conversation owned by %v", got)
					}
					return
				}
				if res.status != http.StatusOK {
					t.Fatalf("status = %d, want 200; body %s", res.status, res.body)
				}
				if stream {
					if ct := res.header.Get("Content-Type"); ct != "text/event-stream" {
						t.Fatalf("Content-Type = %q, want text/event-stream", ct)
					}
				}
				reply := res.body
				if stream { // the reply arrives in chunks: join them
					reply = []byte(sseReplyText(t, res.body))
				}
				if !bytes.Contains(reply, []byte("echo: hi")) || bytes.Contains(res.body, []byte(`"error"`)) {
					t.Fatalf("response = %s, want the echo reply", res.body)
				}
				if got := owners(t, c, s, contextID); !slices.Equal(got, []string{tt.wantPeer}) {
					t.Errorf("conversation owners = %v, want [%s]", got, tt.wantPeer)
				}
			})
		}
	}
	// Refusals are counted by reason.
	fams := scrape(t, c, s, "")
	for _, reason := range []string{"missing", "invalid"} {
		if got := value(t, fams, "gateway_auth_failures_total", "reason", reason); got != wantFailures[reason] {
			t.Errorf("gateway_auth_failures_total{reason=%q} = %v, want %v", reason, got, wantFailures[reason])
		}
	}
}

// TestPeerIsolation: two peers on the same contextId hold two conversations; neither
// sees the other's messages, tasks or history, and operators see both.
func TestPeerIsolation(t *testing.T) {
	s := startServer(t, peersConfig(t))
	c := newHTTPClient(t)
	url := s.URL()
	send := func(token, text string) v1Task {
		t.Helper()
		r := rpc(t, c, url, token, true, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-%s","contextId":"shared","parts":[{"text":%q}]}}}`, text, text))
		if r.Error != nil {
			t.Fatalf("SendMessage(%s) error = %+v", text, r.Error)
		}
		var res struct {
			Task v1Task `json:"task"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil || res.Task.ID == "" {
			t.Fatalf("SendMessage(%s) result = %s", text, r.Result)
		}
		return res.Task
	}
	a1 := send(tokAlice, "alpha-one")
	b1 := send(tokBob, "bravo-one")
	a2 := send(tokAliceNew, "alpha-two") // the rotated token is the same peer
	if a1.ContextID != "shared" || b1.ContextID != "shared" {
		t.Fatalf("contextIds = %q, %q, want shared", a1.ContextID, b1.ContextID)
	}

	// ListTasks on the shared contextId shows each peer its own tasks only.
	list := func(token string) (ids []string, raw string) {
		t.Helper()
		r := rpc(t, c, url, token, true, `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"contextId":"shared","historyLength":10}}`)
		var page struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &page) != nil {
			t.Fatalf("ListTasks = %s %+v", r.Result, r.Error)
		}
		for _, raw := range page.Tasks {
			var task v1Task
			_ = json.Unmarshal(raw, &task)
			ids = append(ids, task.ID)
		}
		slices.Sort(ids)
		return ids, string(r.Result)
	}
	wantA := []string{a1.ID, a2.ID}
	slices.Sort(wantA)
	tests := []struct {
		name          string
		token         string
		wantIDs       []string
		mine, notMine []string
		otherTaskID   string
	}{
		{name: "alice", token: tokAlice, wantIDs: wantA, mine: []string{"alpha-one", "alpha-two"}, notMine: []string{"bravo-one"}, otherTaskID: b1.ID},
		{name: "bob", token: tokBob, wantIDs: []string{b1.ID}, mine: []string{"bravo-one"}, notMine: []string{"alpha-one", "alpha-two"}, otherTaskID: a1.ID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, raw := list(tt.token)
			if !slices.Equal(ids, tt.wantIDs) {
				t.Errorf("ListTasks ids = %v, want %v", ids, tt.wantIDs)
			}
			for _, s := range tt.mine {
				if !strings.Contains(raw, s) {
					t.Errorf("ListTasks history lacks own message %q: %s", s, raw)
				}
			}
			for _, s := range tt.notMine {
				if strings.Contains(raw, s) {
					t.Errorf("ListTasks shows the other peer's message %q: %s", s, raw)
				}
			}
			// The other peer's task does not exist for this one: not found, never forbidden.
			for _, m := range []string{"GetTask", "CancelTask"} {
				r := rpc(t, c, url, tt.token, true, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":%q,"params":{"id":%q}}`, m, tt.otherTaskID))
				assertV1Error(t, r, -32001, "TASK_NOT_FOUND")
			}
		})
	}

	// The agent's view of alice's second turn holds her first message, not bob's.
	resp := adminGet(t, c, s, "admin/v1/conversations/shared/replay?peer=alice", s.localToken)
	var replay conversations.ReplayResult
	err := json.NewDecoder(resp.Body).Decode(&replay)
	resp.Body.Close()
	if err != nil || replay.TaskID != a2.ID {
		t.Fatalf("replay = %+v, %v; want alice's task %s", replay, err, a2.ID)
	}
	if !strings.Contains(replay.Prompt, "alpha-one") || strings.Contains(replay.Prompt, "bravo-one") {
		t.Errorf("alice's second prompt = %q, want alpha-one in its history and no bravo-one", replay.Prompt)
	}
	// Operators see both conversations with their owners.
	if got := owners(t, c, s, "shared"); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("admin listing owners of shared = %v, want [alice bob]", got)
	}
}

// TestPublicAddrNeedsPeerTokens: a non-loopback --addr is refused without peer tokens
// (saying why), and served with them, authentication required.
func TestPublicAddrNeedsPeerTokens(t *testing.T) {
	tests := []struct {
		name     string
		peers    []Peer
		insecure bool
		wantErr  []string // substrings of the error; nil = starts
	}{
		{name: "no peers", wantErr: []string{`"0.0.0.0:0" is not a loopback address`, "no peer tokens are configured", "--insecure-public"}},
		{name: "outbound peers only", peers: []Peer{{Name: "up", URL: "http://127.0.0.1:1/"}}, wantErr: []string{"no peer tokens are configured"}},
		{name: "peer tokens", peers: []Peer{{Name: "alice", Accept: []string{tokAlice}}}},
		{name: "insecure public", insecure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Addr, cfg.Peers, cfg.InsecurePublic = "0.0.0.0:0", tt.peers, tt.insecure
			if tt.wantErr != nil {
				s, err := Open(t.Context(), cfg, discardLogger())
				if err == nil {
					_ = s.Close(t.Context())
					t.Fatalf("OpenServer(%s) error = nil, want a refusal", cfg.Addr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("OpenServer() error = %q, want it to contain %q", err, w)
					}
				}
				return
			}
			s := startServer(t, cfg)
			_, port, _ := net.SplitHostPort(s.Addr())
			c := newHTTPClient(t)
			res := call(t, c, "http://127.0.0.1:"+port+"/", "", false, sendBody(false, "pub", "hi", "", ""))
			want := http.StatusUnauthorized
			if len(tt.peers) == 0 {
				want = http.StatusOK
			}
			if res.status != want {
				t.Errorf("unauthenticated send: status %d, want %d", res.status, want)
			}
		})
	}
}

// TestCardDeclaresBearer: the agent card stays public and declares the bearer scheme
// exactly when peers authenticate.
func TestCardDeclaresBearer(t *testing.T) {
	tests := []struct {
		name   string
		cfg    func(t *testing.T) Config
		bearer bool
	}{
		{name: "no peer tokens", cfg: testConfig},
		{name: "peer tokens", cfg: peersConfig, bearer: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, tt.cfg(t))
			c := newHTTPClient(t)
			u, _ := url.JoinPath(s.URL(), ".well-known", "agent-card.json")
			resp, err := c.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var card struct {
				SecuritySchemes map[string]struct {
					Type   string `json:"type"`
					Scheme string `json:"scheme"`
				} `json:"securitySchemes"`
				Security []map[string][]string `json:"security"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&card); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET card without a token: status %d, %v; want 200", resp.StatusCode, err)
			}
			b, ok := card.SecuritySchemes["bearer"]
			if got := ok && b.Type == "http" && b.Scheme == "bearer" && len(card.Security) == 1; got != tt.bearer {
				t.Errorf("card declares bearer = %v (schemes %+v, security %v), want %v", got, card.SecuritySchemes, card.Security, tt.bearer)
			}
		})
	}
}

// sseReplyText joins the artifact chunks of a v0.3 SSE body.
func sseReplyText(t *testing.T, body []byte) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var env struct {
			Result struct {
				Kind     string `json:"kind"`
				Artifact struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"artifact"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(data), &env); err != nil {
			t.Fatalf("SSE frame %q: %v", data, err)
		}
		if env.Result.Kind == "artifact-update" {
			for _, p := range env.Result.Artifact.Parts {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

// adminGet GETs path of s with "Authorization: Bearer <token>" (none when token is "").
func adminGet(t *testing.T, c *http.Client, s *Server, path, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestAdminReadsNeedTokenWithPeers: once peers authenticate, loopback is no identity
// for the admin API's reads either: without the admin token, or with a peer's token, a
// peer cannot read another peer's conversations there (issue #35's audit of every
// path). Without peer tokens, loopback reads stay open (one user: every caller is local).
func TestAdminReadsNeedTokenWithPeers(t *testing.T) {
	t.Parallel()
	s := startServer(t, peersConfig(t))
	c := newHTTPClient(t)
	rpc(t, c, s.URL(), tokBob, true, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m1","contextId":"bobs","parts":[{"text":"bob's words"}]}}}`)
	for _, path := range []string{"admin/v1/conversations", "admin/v1/conversations/bobs?peer=bob", "admin/v1/conversations/bobs/export?peer=bob", "admin/v1/conversations/bobs/replay?peer=bob"} {
		for _, token := range []string{"", tokAlice, tokBob} {
			resp := adminGet(t, c, s, path, token)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "bob's words") {
				t.Errorf("GET %s with token %q: %d %s, want 401", path, token, resp.StatusCode, body)
			}
		}
		resp := adminGet(t, c, s, path, s.localToken)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the admin token: %d, want 200", path, resp.StatusCode)
		}
	}
	open := startServer(t, testConfig(t))
	resp := adminGet(t, c, open, "admin/v1/conversations", "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("without peer tokens, a loopback read: %d, want 200", resp.StatusCode)
	}
}
