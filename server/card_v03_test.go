package server

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
)

// TestV03ClientNeedsV03CardFields (issue #39 item 4, CARD-STRUCT-001): no card is both
// valid under the strict v1.0 AgentCard schema (additionalProperties: false) and usable
// by a stock v0.3 client. The pure v1.0 card (what the schema allows) is what a
// versionless request would have to get; a2a-go v0.3.3's client cannot be made from it
// (it has no url / preferredTransport / additionalInterfaces to call), while the union
// card the gateway serves to versionless requests works. See docs/conformance.md.
func TestV03ClientNeedsV03CardFields(t *testing.T) {
	t.Parallel()
	for _, peers := range [][]Peer{nil, {{Name: "p", Accept: []string{"tok-card-0123456789"}}}} {
		cfg := testConfig(t)
		cfg.Peers = peers
		s := startServer(t, cfg)
		hc := newHTTPClient(t)
		for _, c := range []struct {
			version string
			wantOK  bool
		}{{"", true}, {"1.0", false}} {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+".well-known/agent-card.json", nil)
			if c.version != "" {
				req.Header.Set("A2A-Version", c.version)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var card a2ago.AgentCard
			err = json.Unmarshal(body, &card)
			if err == nil {
				var cl *a2aclient.Client
				cl, err = a2aclient.NewFromCard(t.Context(), &card, a2aclient.WithJSONRPCTransport(hc))
				if err == nil {
					_ = cl.Destroy()
				}
			}
			if (err == nil) != c.wantOK {
				t.Errorf("peer auth %v, card for A2A-Version %q: a2a-go v0.3.3 client error = %v, want ok %v", peers != nil, c.version, err, c.wantOK)
			}
			t.Logf("peer auth %v, card for A2A-Version %q: a2a-go v0.3.3: %v", peers != nil, c.version, err)
		}
	}
}
