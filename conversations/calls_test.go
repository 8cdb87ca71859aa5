package conversations

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
)

// A turn's tools are written here as package tools writes them (tools/record.go,
// tools/send.go): the TOOL_CALL entry, the exchange recorded with RecordOutbound (Via
// the turn's owner, Origin the call), then the TOOL_RESULT naming the outbound
// conversation. The server's tests drive the same path through a real model and peer.

// sendCall is one peer_send of a scripted turn: to peer, answered in replyCtx ("": the
// peer never answered, nothing is recorded); record false leaves the exchange
// unrecorded (the result still names it); forgedOwner, when set, is the outboundOwner
// the result's metadata claims.
type sendCall struct {
	peer, message, replyCtx string
	unrecorded              bool
	forgedOwner             string
}

func appendEntries(t *testing.T, led *ledger.Store, owner, contextID string, begin bool, es ...ledger.Entry) []ledger.Entry {
	t.Helper()
	res, err := led.Append(t.Context(), ledger.AppendRequest{Owner: owner, ContextID: contextID, BeginTurn: begin, Entries: es})
	if err != nil {
		t.Fatal(err)
	}
	return res.Entries
}

// toolTurn writes one turn of owner in contextID whose agent made calls, with meta as the
// inbound message's metadata.
func toolTurn(t *testing.T, led *ledger.Store, svc *Service, owner, contextID string, meta map[string]any, calls ...sendCall) {
	t.Helper()
	task := "task-" + owner + "-" + contextID
	mb, _ := json.Marshal(meta)
	if meta == nil {
		mb = nil
	}
	appendEntries(t, led, owner, contextID, true,
		ledger.Entry{TaskID: task, Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
			Actor: owner, Role: ledger.RoleUser, Parts: []ledger.Part{{Kind: ledger.PartText, Text: "please ask around"}}, Metadata: mb},
		ledger.Entry{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, Actor: "gateway", State: "working"})
	for i, c := range calls {
		args, _ := json.Marshal(map[string]string{"target": c.peer, "message": c.message})
		callMeta, _ := json.Marshal(map[string]string{"toolCallId": "call_" + string(rune('1'+i)), "toolName": "peer_send"})
		call := appendEntries(t, led, owner, contextID, false, ledger.Entry{TaskID: task, Kind: ledger.KindToolCall, Trust: ledger.TrustAgent,
			Visibility: ledger.VisibilityModel, Actor: "agent", Role: ledger.RoleAgent, Parts: []ledger.Part{{Kind: ledger.PartText, Text: string(args)}}, Metadata: callMeta})[0]
		resMeta := map[string]string{"toolCallId": "call_" + string(rune('1'+i)), "toolName": "peer_send", "outcome": "failed"}
		text := "b did not answer"
		if c.replyCtx != "" {
			if !c.unrecorded {
				_, err := svc.RecordOutbound(t.Context(), OutboundRecord{Peer: c.peer, Via: owner, PeerURL: "http://127.0.0.1:9/", ContextID: c.replyCtx,
					State: "completed", Text: c.message, Reply: "echo: " + c.message, Origin: &Origin{Owner: owner, ContextID: contextID, TaskID: task, EntryID: call.ID}})
				if err != nil {
					t.Fatal(err)
				}
			}
			outOwner := peers.TurnOwner(c.peer, owner)
			if c.forgedOwner != "" {
				outOwner = c.forgedOwner
			}
			resMeta = map[string]string{"toolCallId": "call_" + string(rune('1'+i)), "toolName": "peer_send", "outcome": "ok", "peer": c.peer,
				"outboundOwner": outOwner, "outboundContextId": c.replyCtx, "state": "completed"}
			text = "reply from " + c.peer + ": echo: " + c.message
		}
		rb, _ := json.Marshal(resMeta)
		appendEntries(t, led, owner, contextID, false, ledger.Entry{TaskID: task, Kind: ledger.KindToolResult, Trust: ledger.TrustPeerUntrusted,
			Visibility: ledger.VisibilityModel, Actor: "gateway", Role: ledger.RoleUser, CausationID: call.ID, Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}, Metadata: rb})
	}
	appendEntries(t, led, owner, contextID, false,
		ledger.Entry{TaskID: task, Kind: ledger.KindAgentReply, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel, Actor: "agent",
			Role: ledger.RoleAgent, Parts: []ledger.Part{{Kind: ledger.PartText, Text: "done"}}},
		ledger.Entry{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, Actor: "gateway", State: "completed"})
}

func linkOf(owner, contextID string) string {
	return "/console/conversation?id=" + contextID + "&peer=" + owner
}

func newCallsService(t *testing.T) (*ledger.Store, *Service) {
	t.Helper()
	led, _ := openLedger(t)
	return led, New(led, Config{Link: linkOf})
}

func TestCalls_Down(t *testing.T) {
	t.Parallel()
	led, svc := newCallsService(t)
	toolTurn(t, led, svc, "alice", "ctx-a", nil,
		sendCall{peer: "b", message: "what is 2+2?", replyCtx: "ctx-b1"},
		sendCall{peer: "c", message: "and 3+3?", replyCtx: "ctx-c1"})
	tree, err := svc.Calls(t.Context(), Ref{ContextID: "ctx-a"})
	if err != nil {
		t.Fatalf("Calls() error = %v", err)
	}
	root := tree.Root
	if root.Peer != "alice" || root.ContextID != "ctx-a" || !root.Held || root.State != "completed" || root.LatencyMS <= 0 || root.Link != linkOf("alice", "ctx-a") {
		t.Errorf("root = %+v", root)
	}
	if len(root.Calls) != 2 {
		t.Fatalf("root has %d calls, want 2: %+v", len(root.Calls), root.Calls)
	}
	for i, want := range []struct{ peer, message, ctx string }{{"b", "what is 2+2?", "ctx-b1"}, {"c", "and 3+3?", "ctx-c1"}} {
		c := root.Calls[i]
		if diff := cmp.Diff([]Arg{{"message", want.message}, {"target", want.peer}}, c.Args); c.Name != "peer_send" || diff != "" {
			t.Errorf("call %d: name %q, args (-want +got):\n%s", i, c.Name, diff)
		}
		if c.Outcome != "ok" || !strings.Contains(c.Result, "echo: "+want.message) || c.LatencyMS <= 0 {
			t.Errorf("call %d: outcome %q, result %q, latency %v", i, c.Outcome, c.Result, c.LatencyMS)
		}
		o := c.Outbound
		if o == nil {
			t.Fatalf("call %d has no outbound conversation", i)
		}
		wantOwner := peers.TurnOwner(want.peer, "alice")
		if o.Peer != wantOwner || o.ContextID != want.ctx || !o.Held || o.State != "completed" || o.LatencyMS <= 0 || o.Link != linkOf(wantOwner, want.ctx) {
			t.Errorf("call %d's outbound node = %+v", i, *o)
		}
	}
}

func TestCalls_Up(t *testing.T) {
	t.Parallel()
	led, svc := newCallsService(t)
	hops := map[string]any{a2a.HopsExtension: map[string]any{"hop": 2, "chain": []any{
		map[string]any{"url": "https://gw1.example/", "contextId": "ctx-gw1"},
		map[string]any{"url": "https://gw2.example/", "contextId": "ctx-gw2"}}}}
	toolTurn(t, led, svc, "alice", "ctx-a", hops, sendCall{peer: "b", message: "hi b", replyCtx: "ctx-b1"})

	tree, err := svc.Calls(t.Context(), Ref{ContextID: "ctx-b1"})
	if err != nil {
		t.Fatalf("Calls() error = %v", err)
	}
	if tree.Root.Peer != "out:b@alice" || tree.Root.State != "completed" || len(tree.Root.Calls) != 0 {
		t.Errorf("root = %+v", tree.Root)
	}
	if len(tree.CausedBy) != 1 {
		t.Fatalf("caused by %d nodes, want 1: %+v", len(tree.CausedBy), tree.CausedBy)
	}
	up := tree.CausedBy[0]
	if up.Peer != "alice" || up.ContextID != "ctx-a" || !up.Held || up.Link != linkOf("alice", "ctx-a") || len(up.Calls) != 1 || up.Calls[0].Name != "peer_send" {
		t.Errorf("caused by %+v", up)
	}
	want := []a2a.HopLink{{URL: "https://gw1.example/", ContextID: "ctx-gw1"}, {URL: "https://gw2.example/", ContextID: "ctx-gw2"}}
	if diff := cmp.Diff(want, tree.Hops); tree.Hop != 2 || diff != "" {
		t.Errorf("hop %d, chain (-want +got):\n%s", tree.Hop, diff)
	}
	// The inbound conversation shows its own chain.
	in, err := svc.Calls(t.Context(), Ref{ContextID: "ctx-a", Owner: "alice"})
	if err != nil || in.Hop != 2 || len(in.Hops) != 2 || len(in.CausedBy) != 0 {
		t.Errorf("inbound tree: hop %d, chain %+v, caused by %+v, %v", in.Hop, in.Hops, in.CausedBy, err)
	}
}

func TestCalls_NotHeld(t *testing.T) {
	t.Parallel()
	led, svc := newCallsService(t)
	toolTurn(t, led, svc, "alice", "ctx-a", nil,
		sendCall{peer: "b", message: "hi", replyCtx: "ctx-gone", unrecorded: true},
		sendCall{peer: "b", message: "again"}) // failed: no outbound conversation
	tree, err := svc.Calls(t.Context(), Ref{ContextID: "ctx-a", Owner: "alice"})
	if err != nil || len(tree.Root.Calls) != 2 {
		t.Fatalf("Calls() = %+v, %v", tree, err)
	}
	o := tree.Root.Calls[0].Outbound
	if o == nil || o.Held || o.Peer != "out:b@alice" || o.ContextID != "ctx-gone" || o.Link != "" || o.State != "completed" {
		t.Errorf("the unrecorded exchange's node = %+v, want one not held here", o)
	}
	if c := tree.Root.Calls[1]; c.Outbound != nil || c.Outcome != "failed" {
		t.Errorf("the failed call = %+v, want no outbound node", c)
	}
}

// TestCalls_CycleAndDepth: the peer called is this gateway, reached as the same owner
// (loopback): each outbound conversation's other side is held here, and the calls go
// round. The tree stops at the conversation it has shown; a long chain at MaxCallDepth.
func TestCalls_CycleAndDepth(t *testing.T) {
	t.Parallel()
	led, svc := newCallsService(t)
	toolTurn(t, led, svc, "local", "ctx-1", nil, sendCall{peer: "self", message: "go on", replyCtx: "ctx-2"})
	toolTurn(t, led, svc, "local", "ctx-2", nil, sendCall{peer: "self", message: "and back", replyCtx: "ctx-1"})
	tree, err := svc.Calls(t.Context(), Ref{ContextID: "ctx-1", Owner: "local"})
	if err != nil {
		t.Fatal(err)
	}
	o := tree.Root.Calls[0].Outbound
	if o == nil || o.Peer != "out:self@local" || o.Reply == nil || o.Reply.ContextID != "ctx-2" || len(o.Reply.Calls) != 1 {
		t.Fatalf("first hop = %+v", o)
	}
	back := o.Reply.Calls[0].Outbound
	if back == nil || back.ContextID != "ctx-1" || back.Reply == nil || back.Reply.Cut != "cycle" || len(back.Reply.Calls) != 0 {
		t.Errorf("the call back to ctx-1 = %+v, want its reply cut as a cycle", back)
	}

	for i := range MaxCallDepth + 2 {
		toolTurn(t, led, svc, "local", "d-"+string(rune('a'+i)), nil, sendCall{peer: "self", message: "next", replyCtx: "d-" + string(rune('a'+i+1))})
	}
	tree, err = svc.Calls(t.Context(), Ref{ContextID: "d-a", Owner: "local"})
	if err != nil {
		t.Fatal(err)
	}
	depth, n := 0, &tree.Root
	for n.Cut == "" && len(n.Calls) > 0 && n.Calls[0].Outbound != nil && n.Calls[0].Outbound.Reply != nil {
		n, depth = n.Calls[0].Outbound.Reply, depth+2
	}
	if n.Cut != "depth" || depth != MaxCallDepth {
		t.Errorf("the chain stops at depth %d (cut %q), want %d (depth)", depth, n.Cut, MaxCallDepth)
	}
}

// TestCalls_Isolation: alice's and bob's conversations on one gateway. Stored metadata
// that points across (a result naming bob's outbound owner, an origin naming alice's
// call in bob's outbound conversation) shows nothing of the other peer.
func TestCalls_Isolation(t *testing.T) {
	t.Parallel()
	led, svc := newCallsService(t)
	toolTurn(t, led, svc, "bob", "ctx-bob", nil, sendCall{peer: "b", message: "bob's secret question", replyCtx: "ctx-shared"})
	toolTurn(t, led, svc, "alice", "ctx-alice", nil, sendCall{peer: "b", message: "alice asks", replyCtx: "ctx-shared", unrecorded: true, forgedOwner: "out:b@bob"})
	aliceRes, err := svc.Show(t.Context(), Ref{ContextID: "ctx-alice"}, ShowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var aliceCall string
	for _, e := range aliceRes.Entries {
		if e.Kind == ledger.KindToolCall {
			aliceCall = e.ID
		}
	}
	// An exchange in bob's outbound owner whose origin is forged to name alice's call.
	if _, err := svc.RecordOutbound(t.Context(), OutboundRecord{Peer: "b", Via: "bob", PeerURL: "http://127.0.0.1:9/", ContextID: "ctx-bob-2",
		State: "completed", Text: "bob's other secret", Reply: "ok", Origin: &Origin{Owner: "alice", ContextID: "ctx-alice", EntryID: aliceCall}}); err != nil {
		t.Fatal(err)
	}

	alice, err := svc.Calls(t.Context(), Ref{ContextID: "ctx-alice", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	o := alice.Root.Calls[0].Outbound
	if o == nil || o.Peer != "out:b@alice" || o.Held {
		t.Errorf("alice's outbound node = %+v, want out:b@alice, not held here (bob's is never read)", o)
	}
	noneOf(t, "alice's tree", alice, "bob")

	bobOut, err := svc.Calls(t.Context(), Ref{ContextID: "ctx-bob-2", Owner: "out:b@bob"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bobOut.CausedBy) != 0 {
		t.Errorf("bob's outbound conversation is caused by %+v, want nothing (the origin names alice)", bobOut.CausedBy)
	}
	noneOf(t, "bob's outbound tree", bobOut, "alice")

	// Tool entries forged into an operator's outbound conversation lead nowhere.
	toolTurn(t, led, svc, "out:b", "ctx-op", nil, sendCall{peer: "b", message: "m", replyCtx: "ctx-shared", unrecorded: true})
	op, err := svc.Calls(t.Context(), Ref{ContextID: "ctx-op", Owner: "out:b"})
	if err != nil || len(op.Root.Calls) != 1 || op.Root.Calls[0].Outbound != nil || len(op.CausedBy) != 0 {
		t.Errorf("the operator's outbound conversation's tree = %+v, %v; want its call followed nowhere", op, err)
	}
	if _, err := svc.Calls(t.Context(), Ref{ContextID: "ctx-bob", Owner: "alice"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Calls(bob's conversation as alice) error = %v, want ErrNotFound", err)
	}
}

// noneOf fails t when the tree's JSON mentions s.
func noneOf(t *testing.T, what string, tree CallTree, s string) {
	t.Helper()
	b, _ := json.Marshal(tree)
	if strings.Contains(string(b), s) {
		t.Errorf("%s mentions %q: %s", what, s, b)
	}
}

func TestCallArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		args     []Arg
		text     string
	}{
		{"strings and nested", `{"target":"b","opts":{"a": [1, 2]},"n":5,"ok":true,"x":null}`,
			[]Arg{{"target", "b"}, {"opts", `{"a":[1,2]}`}, {"n", "5"}, {"ok", "true"}, {"x", "null"}}, ""},
		{"markup stays text", `{"message":"<script>alert(1)</script>"}`, []Arg{{"message", "<script>alert(1)</script>"}}, ""},
		{"credential redacted", `{"message":"my token ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`, []Arg{{"message", "my token [redacted:github-token]"}}, ""},
		{"empty object", `{}`, []Arg{}, ""},
		{"not an object", `[1,2]`, nil, "[1,2]"},
		{"trailing data", `{"a":1} x`, nil, `{"a":1} x`},
		{"not JSON", `target=b`, nil, "target=b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args, text := callArgs(tc.in)
			if diff := cmp.Diff(tc.args, args); diff != "" || text != tc.text {
				t.Errorf("callArgs(%q) text %q (want %q), args (-want +got):\n%s", tc.in, text, tc.text, diff)
			}
		})
	}
}
