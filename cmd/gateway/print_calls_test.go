package main

import (
	"bytes"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/conversations"
)

func TestPrintCalls(t *testing.T) {
	t.Parallel()
	tree := conversations.CallTree{
		Hop: 1, Hops: []a2a.HopLink{{URL: "https://gw1.example/", ContextID: "ctx-gw1"}},
		Root: conversations.CallNode{Peer: "alice", ContextID: "ctx-a", Held: true, State: "completed", LatencyMS: 20,
			Calls: []conversations.ToolCall{
				{Name: "peer_send", Outcome: "ok", LatencyMS: 12.5, Args: []conversations.Arg{{Key: "target", Value: "b"}, {Key: "message", Value: "hi"}},
					Outbound: &conversations.CallNode{Peer: "out:b@alice", ContextID: "ctx-b", Held: true, State: "completed", LatencyMS: 12}},
				{Name: "peer_send", Outcome: "ok", ArgsText: "[1]", Outbound: &conversations.CallNode{Peer: "out:c@alice", ContextID: "gone"}},
			}},
	}
	var b bytes.Buffer
	printCalls(&b, tree)
	want := `reached here at hop 1, through https://gw1.example/ (ctx-gw1)
alice  ctx-a  completed  20.0 ms
  peer_send  ok  12.5 ms
      target: b
      message: hi
    out:b@alice  ctx-b  completed  12.0 ms
  peer_send  ok
      [1]
    out:c@alice  gone  (not held here)
`
	if got := b.String(); got != want {
		t.Errorf("printCalls:\n%s\nwant:\n%s", got, want)
	}
}
