package a2a

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestA2AVersionMajorMinor (issue 35 item 9): A2A-Version is matched on Major.Minor as
// the specification says (the patch never matters): 1.0 and 0.3 are served, any other
// version (1.1, a bare 1, 2.0, 0.2, garbage) is VersionNotSupportedError, -32009, in the
// v1.0 error shape for a v1.0 method (an ErrorInfo with reason VERSION_NOT_SUPPORTED),
// whichever dialect the method is. Before the fix 1.1 and 1 were served as 1.0.
func TestA2AVersionMajorMinor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version string
		ok      bool
	}{
		{"1.0", true}, {"1.0.0", true}, {"1.0.7", true}, {" 1.0 ", true},
		{"0.3", true}, {"0.3.0", true}, {"0.3.9", true}, {"", true},
		{"1", false}, {"1.1", false}, {"1.1.0", false}, {"1.10", false}, {"1.", false}, {"1.0x", false},
		{"2.0", false}, {"0.2", false}, {"0.3x", false}, {"0", false}, {"v1.0", false}, {"latest", false},
	}
	for _, tc := range tests {
		for _, method := range []string{"GetTask", "tasks/get"} {
			t.Run(tc.version+" "+method, func(t *testing.T) {
				t.Parallel()
				var headers []string
				if tc.version != "" {
					headers = append(headers, "A2A-Version: "+tc.version)
				}
				w := serveDirect(t, newWorldFake(), TransportConfig{}, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"id":"task-1"}}`, headers...)
				r := decodeResponse(t, w.Body.Bytes())
				if tc.ok {
					if r.Error != nil {
						t.Fatalf("A2A-Version %q: error %+v, want a result", tc.version, r.Error)
					}
					return
				}
				if r.Error == nil || r.Error.Code != -32009 {
					t.Fatalf("A2A-Version %q: answer %s, want -32009", tc.version, w.Body.Bytes())
				}
				if !strings.Contains(r.Error.Message, "use 1.0 or 0.3") {
					t.Errorf("A2A-Version %q: message %q, want it to name the versions served", tc.version, r.Error.Message)
				}
				if method != "GetTask" {
					return
				}
				var details []map[string]any
				if err := json.Unmarshal(r.Error.Data, &details); err != nil || len(details) == 0 {
					t.Fatalf("A2A-Version %q: data %s, want the v1.0 array of details", tc.version, r.Error.Data)
				}
				if d := details[0]; d["@type"] != "type.googleapis.com/google.rpc.ErrorInfo" || d["reason"] != "VERSION_NOT_SUPPORTED" || d["domain"] != ErrorDomain {
					t.Errorf("A2A-Version %q: first detail %v, want an ErrorInfo VERSION_NOT_SUPPORTED in %s", tc.version, d, ErrorDomain)
				}
			})
		}
	}
}

// TestCardVersionMajorMinor (issue 35 item 9): the well-known card is the pure v1.0 card
// for A2A-Version 1.0 (any patch) only; a version the gateway does not speak (1.1, a
// bare 1, 2.0) gets the union card, as no version does: discovery is how a client learns
// which versions are served (supportedInterfaces[].protocolVersion), so it is not
// refused, and the gateway does not claim 1.1's semantics by answering in 1.x's format.
func TestCardVersionMajorMinor(t *testing.T) {
	t.Parallel()
	h := NewCardHandler(CardConfig{})
	union := getCard(t, h, "gw.example").Body.String()
	v1 := getCard(t, h, "gw.example", "A2A-Version: 1.0").Body.String()
	if union == v1 {
		t.Fatal("the v1.0 card is the union card")
	}
	for _, tc := range []struct {
		version string
		want    string
	}{
		{"1.0", v1}, {"1.0.3", v1},
		{"0.3", union}, {"1", union}, {"1.1", union}, {"2.0", union}, {"garbage", union},
	} {
		if got := getCard(t, h, "gw.example", "A2A-Version: "+tc.version).Body.String(); got != tc.want {
			which := map[bool]string{true: "the v1.0 card", false: "the union card"}
			t.Errorf("card for A2A-Version %q is %s, want %s", tc.version, which[got == v1], which[tc.want == v1])
		}
	}
}
