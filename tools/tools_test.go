package tools

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
	"github.com/a2a-gateway/gateway/prompt"
	"github.com/a2a-gateway/gateway/turn"
	"github.com/google/go-cmp/cmp"
)

// fixture is a real ledger in a temp dir with five conversations: the caller's
// ("local", ctx-1), another peer's ("peer2", ctx-2), an outbound one the caller's turns
// started with peer b ("out:b@local", ctx-out), one another peer's turns started with b
// ("out:b@peer2", ctx-out2) and one the operator started with b ("out:b", ctx-op).
func fixture(t *testing.T) (*ledger.Store, *conversations.Service) {
	t.Helper()
	led, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	for _, c := range []struct{ owner, ctx, user, agent string }{
		{"local", "ctx-1", "what is 2+2", "4"},
		{"peer2", "ctx-2", "secret plans", "ok"},
		{"out:b@local", "ctx-out", "hello b", "hello from b"},
		{"out:b@peer2", "ctx-out2", "peer2 asks b", "peer2's answer from b"},
		{"out:b", "ctx-op", "operator asks b", "operator's answer from b"},
	} {
		_, err := led.Append(t.Context(), ledger.AppendRequest{Owner: c.owner, ContextID: c.ctx, BeginTurn: true, Entries: []ledger.Entry{
			{Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser, Actor: c.owner,
				Parts: []ledger.Part{{Kind: ledger.PartText, Text: c.user}}},
			{Kind: ledger.KindAgentReply, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel, Role: ledger.RoleAgent, Actor: "agent",
				Parts: []ledger.Part{{Kind: ledger.PartText, Text: c.agent}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return led, conversations.New(led, conversations.Config{})
}

// recorder keeps what a turn's tools record.
type recorder struct {
	mu      sync.Mutex
	entries []ledger.Entry
}

func (r *recorder) record(_ context.Context, es ...ledger.Entry) ([]ledger.Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range es {
		es[i].ID = "e" + string(rune('0'+len(r.entries)))
		r.entries = append(r.entries, es[i])
	}
	return es, nil
}

func newTurnTools(t *testing.T, mode Mode, conv Conversations, meta map[string]any) (agent.Tools, *recorder) {
	t.Helper()
	rec := &recorder{}
	box := New(Config{Mode: mode, Conv: conv, Self: "http://127.0.0.1:1/", Peers: []peers.Peer{{Name: "b", URL: "http://127.0.0.1:2/"}}})
	t.Cleanup(func() { box.Close() })
	tt := box.ForTurn(turn.ToolTurn{Owner: "local", ContextID: "ctx-now", TaskID: "task-1", Metadata: meta, Record: rec.record})
	if tt == nil {
		t.Fatal("ForTurn() = nil")
	}
	return tt, rec
}

func TestConversationHistory(t *testing.T) {
	t.Parallel()
	_, svc := fixture(t)
	tt, rec := newTurnTools(t, ModeRead, svc, nil)
	tests := []struct {
		name, args string
		want       []string
	}{
		{"recalls", `{"contextId":"ctx-1"}`, []string{"Conversation ctx-1 (last 2 messages):", "[user] what is 2+2", "[agent] 4"}},
		{"limit", `{"contextId":"ctx-1","limit":1}`, []string{"Conversation ctx-1 (last 1 messages):\n[agent] 4"}},
		{"outbound", `{"contextId":"ctx-out","limit":500}`, []string{"[agent] hello from b"}},
		{"requires contextId", `{}`, []string{"refused: 'contextId' is required"}},
		{"unknown", `{"contextId":"nope"}`, []string{`refused: no conversation "nope"`}},
		{"another peer's", `{"contextId":"ctx-2"}`, []string{`refused: no conversation "ctx-2"`}},
		{"another peer's outbound", `{"contextId":"ctx-out2"}`, []string{`refused: no conversation "ctx-out2"`}},
		{"the operator's outbound", `{"contextId":"ctx-op"}`, []string{`refused: no conversation "ctx-op"`}},
	}
	for _, tc := range tests {
		got, err := tt.Call(t.Context(), agent.ToolCall{ID: "c-" + tc.name, Name: ToolHistory, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: Call() error = %v", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: result %q lacks %q", tc.name, got, w)
			}
		}
		for _, leak := range []string{"secret plans", "peer2 asks b", "operator asks b"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: a conversation of another owner leaked: %q", tc.name, got)
			}
		}
	}
	if n := len(rec.entries); n != 2*len(tests) {
		t.Fatalf("recorded %d entries, want %d", n, 2*len(tests))
	}
	call, res := rec.entries[0], rec.entries[1]
	var meta map[string]string
	_ = json.Unmarshal(res.Metadata, &meta)
	if call.Kind != ledger.KindToolCall || res.Kind != ledger.KindToolResult || res.CausationID != call.ID ||
		meta[prompt.MetaToolCallID] != "c-recalls" || meta[prompt.MetaToolName] != ToolHistory || meta["outcome"] != "ok" {
		t.Errorf("recorded %+v then %+v", call, res)
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	_, svc := fixture(t)
	names := func(tt agent.Tools) []string {
		var out []string
		for _, s := range tt.Specs() {
			out = append(out, s.Name)
		}
		return out
	}
	read, _ := newTurnTools(t, ModeRead, svc, nil)
	all, _ := newTurnTools(t, ModeAll, svc, nil)
	if diff := cmp.Diff([]string{ToolPeersList, ToolHistory}, names(read)); diff != "" {
		t.Errorf("read mode tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{ToolPeersList, ToolHistory, ToolPeerSend}, names(all)); diff != "" {
		t.Errorf("all mode tools (-want +got):\n%s", diff)
	}
	got, err := read.Call(t.Context(), agent.ToolCall{ID: "x", Name: ToolPeerSend, Arguments: `{"target":"b","message":"hi"}`})
	if err != nil || !strings.HasPrefix(got, `refused: unknown tool "peer_send"`) {
		t.Errorf("peer_send in read mode = %q, %v", got, err)
	}
	if New(Config{Mode: ModeNone, Conv: svc}).ForTurn(turn.ToolTurn{}) != nil {
		t.Error("ModeNone offers tools")
	}
	for _, s := range []string{"none", "read", "all"} {
		if _, err := ParseMode(s); err != nil {
			t.Errorf("ParseMode(%q) error = %v", s, err)
		}
	}
	if _, err := ParseMode("some"); err == nil {
		t.Error(`ParseMode("some") accepted`)
	}
}

func TestPeerSendRefusals(t *testing.T) {
	t.Parallel()
	_, svc := fixture(t)
	chain := map[string]any{HopsExtension: map[string]any{"hop": 1.0, "chain": []any{map[string]any{"url": "http://127.0.0.1:2", "contextId": "ctx-up"}}}}
	deep := map[string]any{HopsExtension: map[string]any{"hop": 4.0, "chain": []any{}}}
	tests := []struct {
		name string
		meta map[string]any
		args string
		want string
	}{
		{"bad args", nil, `{"target":"b"}`, "refused: peer_send wants"},
		{"unknown target", nil, `{"target":"zed","message":"hi"}`, `refused: target "zed"`},
		{"raw URL", nil, `{"target":"http://10.0.0.1/","message":"hi"}`, "only configured peers"},
		{"loop back to a gateway in the chain", chain, `{"target":"b","message":"hi"}`, "refused: loop: b would call back into http://127.0.0.1:2 (conversation ctx-up)"},
		{"hop limit", deep, `{"target":"b","message":"hi"}`, "refused: the hop limit is reached: this conversation is 4 agent-to-agent call(s) deep and the limit is 4"},
	}
	for _, tc := range tests {
		tt, rec := newTurnTools(t, ModeAll, svc, tc.meta)
		got, err := tt.Call(t.Context(), agent.ToolCall{ID: "c1", Name: ToolPeerSend, Arguments: tc.args})
		if err != nil || !strings.Contains(got, tc.want) {
			t.Errorf("%s: result %q (%v), want it to contain %q", tc.name, got, err, tc.want)
		}
		if len(rec.entries) != 2 || !strings.Contains(string(rec.entries[1].Metadata), `"outcome":"refused"`) {
			t.Errorf("%s: recorded %+v", tc.name, rec.entries)
		}
	}
}

func TestPerPeerLimit(t *testing.T) {
	t.Parallel()
	b := New(Config{Mode: ModeAll, PerPeer: 2})
	tt := &turnTools{box: b, sent: map[string]int{}}
	tg := peers.Target{Kind: peers.KindPeer, Name: "b", URL: "http://127.0.0.1:2/"}
	for i := range 2 {
		if out := tt.admit(a2a.Hops{}, tg, ""); out != nil {
			t.Fatalf("call %d refused: %s", i+1, out.text)
		}
	}
	if out := tt.admit(a2a.Hops{}, tg, ""); out == nil || !strings.Contains(out.text, "already sent 2 messages to b, the limit per peer") {
		t.Errorf("third call: %+v", out)
	}
}

func TestHops(t *testing.T) {
	t.Parallel()
	h := hopsOf(map[string]any{HopsExtension: map[string]any{"hop": 2.0, "chain": []any{map[string]any{"url": "http://A/", "contextId": "c1"}}}})
	next := h.Next("http://B/", "c2")
	want := a2a.Hops{Hop: 3, Chain: []a2a.HopLink{{URL: "http://A/", ContextID: "c1"}, {URL: "http://B/", ContextID: "c2"}}}
	if diff := cmp.Diff(want, next); diff != "" {
		t.Errorf("Next (-want +got):\n%s", diff)
	}
	if len(h.Chain) != 1 {
		t.Errorf("Next changed the inbound chain: %+v", h)
	}
	for _, tc := range []struct {
		url, ctx string
		loop     bool
	}{
		{"HTTP://a", "", true}, {"http://b/", "", true}, {"http://c/", "c1", true}, {"http://c/", "", false}, {"http://c/", "c3", false},
	} {
		if _, got := loops(next, tc.url, tc.ctx); got != tc.loop {
			t.Errorf("loops(%q, %q) = %v, want %v", tc.url, tc.ctx, got, tc.loop)
		}
	}
}

func TestTurnTokenHTTP(t *testing.T) {
	t.Parallel()
	_, svc := fixture(t)
	rec := &recorder{}
	box := New(Config{Mode: ModeRead, Conv: svc, Self: "http://127.0.0.1:1/", MaxCalls: 1})
	tt := box.ForTurn(turn.ToolTurn{Owner: "local", ContextID: "ctx-1", Record: rec.record})
	env := tt.(agent.ToolEnv).Env()
	token := strings.TrimPrefix(env[1], EnvTurnToken+"=")
	if env[0] != EnvURL+"=http://127.0.0.1:1/" || !strings.HasPrefix(token, "gwt_") {
		t.Fatalf("Env() = %q", env)
	}
	post := func(token, body string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, ToolsPath, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		box.ServeHTTP(w, r)
		var res ToolResponse
		_ = json.Unmarshal(w.Body.Bytes(), &res)
		return w.Code, res.Result
	}
	history := `{"tool":"conversation_history","arguments":{"contextId":"ctx-1"}}`
	tests := []struct {
		name, token, body string
		code              int
		want              string
	}{
		{"wrong token", "gwt_nope", history, http.StatusUnauthorized, ""},
		{"bad body", token, `{"arguments":1}`, http.StatusBadRequest, ""},
		{"call", token, history, http.StatusOK, "[agent] 4"},
		{"past the budget", token, history, http.StatusOK, "refused: this turn's limit of 1 tool calls is spent"},
	}
	for _, tc := range tests {
		code, got := post(tc.token, tc.body)
		if code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("%s: HTTP %d %q, want %d with %q", tc.name, code, got, tc.code, tc.want)
		}
	}
	if len(rec.entries) != 2 {
		t.Errorf("recorded %d entries, want the one call's 2", len(rec.entries))
	}
	tt.(interface{ Close() }).Close()
	if code, _ := post(token, history); code != http.StatusUnauthorized {
		t.Errorf("after Close: HTTP %d, want 401", code)
	}
}

// TestToolsSeeOnlyTheirOwnersConversations: a turn of peer alice sees, through every
// tool, only alice's conversations and the outbound ones alice's turns started; bob's
// turn sees only bob's. The operator's outbound conversations are nobody's turn's.
func TestToolsSeeOnlyTheirOwnersConversations(t *testing.T) {
	t.Parallel()
	led, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	for _, c := range []struct{ owner, ctx, text string }{
		{"alice", "ctx-a", "alice's own words"},
		{"bob", "ctx-b", "bob's own words"},
		{"out:carol@alice", "out-a", "alice's turn asked carol"},
		{"out:carol@bob", "out-b", "bob's turn asked carol"},
		{"out:carol", "out-op", "the operator asked carol"},
	} {
		_, err := led.Append(t.Context(), ledger.AppendRequest{Owner: c.owner, ContextID: c.ctx, BeginTurn: true, Entries: []ledger.Entry{
			{Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser, Actor: c.owner,
				Parts: []ledger.Part{{Kind: ledger.PartText, Text: c.text}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	svc := conversations.New(led, conversations.Config{})
	// carol's URL answers nothing: an admitted send fails to deliver ("failed: carol did
	// not answer"), a refused one never tries.
	box := New(Config{Mode: ModeAll, Conv: svc, Self: "http://127.0.0.1:1/", PeerTimeout: time.Second,
		Peers: []peers.Peer{{Name: "carol", URL: "http://127.0.0.1:9/"}}})
	t.Cleanup(func() { box.Close() })
	for _, tc := range []struct{ me, other string }{{"alice", "bob"}, {"bob", "alice"}} {
		rec := &recorder{}
		tt := box.ForTurn(turn.ToolTurn{Owner: tc.me, ContextID: "ctx-" + tc.me[:1], TaskID: "t", Record: rec.record})
		call := func(name, args string) string {
			got, err := tt.Call(t.Context(), agent.ToolCall{ID: "c", Name: name, Arguments: args})
			if err != nil {
				t.Fatalf("%s: %s(%s) error = %v", tc.me, name, args, err)
			}
			return got
		}
		mine, theirs := "out-"+tc.me[:1], "out-"+tc.other[:1]
		list := call(ToolPeersList, `{}`)
		if !strings.Contains(list, "conversation "+mine+" ") || strings.Contains(list, theirs) || strings.Contains(list, "out-op") {
			t.Errorf("%s: peers_list = %q, want %s only", tc.me, list, mine)
		}
		for _, ctx := range []string{mine, "ctx-" + tc.me[:1]} {
			if got := call(ToolHistory, `{"contextId":"`+ctx+`"}`); !strings.HasPrefix(got, "Conversation "+ctx) {
				t.Errorf("%s: conversation_history(%s) = %q, want it readable", tc.me, ctx, got)
			}
		}
		for _, ctx := range []string{theirs, "ctx-" + tc.other[:1], "out-op"} {
			if got := call(ToolHistory, `{"contextId":"`+ctx+`"}`); !strings.HasPrefix(got, "refused: no conversation") || strings.Contains(got, "words") || strings.Contains(got, "asked") {
				t.Errorf("%s: conversation_history(%s) = %q, want refused", tc.me, ctx, got)
			}
		}
		for _, args := range []string{
			`{"target":"` + theirs + `","message":"hi"}`,
			`{"target":"carol","contextId":"` + theirs + `","message":"hi"}`,
			`{"target":"out-op","message":"hi"}`,
			`{"target":"carol","contextId":"out-op","message":"hi"}`,
		} {
			if got := call(ToolPeerSend, args); !strings.HasPrefix(got, "refused: ") {
				t.Errorf("%s: peer_send(%s) = %q, want refused", tc.me, args, got)
			}
		}
		for _, args := range []string{`{"target":"` + mine + `","message":"hi"}`, `{"target":"carol","contextId":"` + mine + `","message":"hi"}`} {
			if got := call(ToolPeerSend, args); !strings.HasPrefix(got, "failed: carol did not answer") {
				t.Errorf("%s: peer_send(%s) = %q, want it admitted (and failing to reach carol)", tc.me, args, got)
			}
		}
	}
}

// TestHopCountFloor: the hop count a turn's calls carry is never lower than what the
// conversation's earlier messages carried, whatever the latest message says.
func TestHopCountFloor(t *testing.T) {
	t.Parallel()
	led, svc := fixture(t)
	deep, _ := json.Marshal(map[string]any{HopsExtension: map[string]any{"hop": 4, "chain": []any{map[string]any{"url": "http://127.0.0.1:7/", "contextId": "up"}}}})
	_, err := led.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "ctx-deep", BeginTurn: true, Entries: []ledger.Entry{
		{Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser, Actor: "local",
			Parts: []ledger.Part{{Kind: ledger.PartText, Text: "deep"}}, Metadata: deep},
		{Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser, Actor: "local",
			Parts: []ledger.Part{{Kind: ledger.PartText, Text: "now without hops"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	box := New(Config{Mode: ModeAll, Conv: svc, Self: "http://127.0.0.1:1/", Peers: []peers.Peer{{Name: "b", URL: "http://127.0.0.1:2/"}}})
	t.Cleanup(func() { box.Close() })
	rec := &recorder{}
	tt := box.ForTurn(turn.ToolTurn{Owner: "local", ContextID: "ctx-deep", TaskID: "t", Record: rec.record,
		Metadata: map[string]any{HopsExtension: map[string]any{"hop": 0.0}}})
	got, err := tt.Call(t.Context(), agent.ToolCall{ID: "c", Name: ToolPeerSend, Arguments: `{"target":"b","message":"hi"}`})
	if err != nil || !strings.Contains(got, "refused: the hop limit is reached: this conversation is 4 agent-to-agent call(s) deep") {
		t.Errorf("peer_send = %q (%v), want the hop limit of the conversation's earlier message", got, err)
	}
}
