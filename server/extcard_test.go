package server

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExtendedCardSameOnBothTransports (issue 15 item 10b): GetExtendedAgentCard (and the
// v0.3 agent/getAuthenticatedExtendedCard) answers the same card over the WebSocket as
// over HTTP with the same credentials; the WebSocket used to answer -32007 (not
// configured).
func TestExtendedCardSameOnBothTransports(t *testing.T) {
	t.Parallel()
	s := startServer(t, peersConfig(t))
	c := newHTTPClient(t)
	ws := wsDial(t, s, tokAlice)
	for _, tc := range []struct {
		method string
		v1     bool
	}{{"GetExtendedAgentCard", true}, {"agent/getAuthenticatedExtendedCard", false}} {
		body := `{"jsonrpc":"2.0","id":7,"method":"` + tc.method + `"}`
		httpResp := rpc(t, c, s.URL(), tokAlice, tc.v1, body)
		if httpResp.Error != nil {
			t.Fatalf("HTTP %s: error %+v, want the card", tc.method, httpResp.Error)
		}
		wsWrite(t, ws, "%s", body)
		f, err := wsReadFrame(ws)
		if err != nil {
			t.Fatalf("WebSocket %s: %v", tc.method, err)
		}
		if f.Error != nil {
			t.Errorf("WebSocket %s: error %d %q, want the card HTTP answers", tc.method, f.Error.Code, f.Error.Message)
			continue
		}
		var httpCard, wsCard map[string]any
		if err := json.Unmarshal(httpResp.Result, &httpCard); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(f.Result, &wsCard); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(httpCard, wsCard); diff != "" {
			t.Errorf("%s card over WebSocket differs from HTTP (-http +ws):\n%s", tc.method, diff)
		}
	}
}
