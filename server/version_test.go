package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
)

// TestA2AVersionUnsupportedRefused (issue 35 item 9): a v1.0 send with A2A-Version 1.1
// or a bare 1 used to be served as 1.0. Now it is VersionNotSupportedError (-32009, an
// ErrorInfo VERSION_NOT_SUPPORTED) and nothing is stored, while 1.0.5 (a patch) is
// served; the well-known card is the pure v1.0 card for 1.0.x and the union card for
// 1.1 (a version the gateway does not speak is not refused discovery).
func TestA2AVersionUnsupportedRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	send := func(version, ctxID string) rpcResponse {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-` + ctxID +
			`","contextId":"` + ctxID + `","parts":[{"text":"hi"}]}}}`
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL(), bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", version)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out rpcResponse
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, v := range []string{"1.1", "1", "2.0"} {
		r := send(v, "ver-"+v)
		if r.Error == nil || r.Error.Code != -32009 {
			t.Errorf("SendMessage with A2A-Version %s: error %+v result %s, want -32009", v, r.Error, r.Result)
			continue
		}
		var details []map[string]any
		if err := json.Unmarshal(r.Error.Data, &details); err != nil || len(details) == 0 || details[0]["reason"] != "VERSION_NOT_SUPPORTED" {
			t.Errorf("A2A-Version %s: error data %s, want a v1.0 ErrorInfo VERSION_NOT_SUPPORTED", v, r.Error.Data)
		}
	}
	if r := send("1.0.5", "ver-patch"); r.Error != nil {
		t.Errorf("SendMessage with A2A-Version 1.0.5: %+v, want it served", r.Error)
	}
	convs, err := s.ledger.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range convs {
		if cv.ContextID != "ver-patch" {
			t.Errorf("conversation %q stored for a refused version", cv.ContextID)
		}
	}
	checkPureV1(t, "the card with A2A-Version 1.0.2", getCardBody(t, c, s, "A2A-Version", "1.0.2"))
	top, _ := members(t, getCardBody(t, c, s, "A2A-Version", "1.1"))
	for _, k := range []string{"protocolVersion", "url", "supportedInterfaces"} {
		if !slices.Contains(top, k) {
			t.Errorf("the card with A2A-Version 1.1 lacks %q: want the union card", k)
		}
	}
}

// TestV1SendPushConfigV03FieldRefused (issue 35, "also seen"): a v1.0 SendMessage with
// configuration.pushNotificationConfig (the v0.3 name) used to run the turn and register
// no webhook. It is refused with -32602 naming configuration.taskPushNotificationConfig,
// and nothing is stored; a v0.3 message/send keeps its field.
func TestV1SendPushConfigV03FieldRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	r := postRPC(t, c, s.URL(), true, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"configuration":{"pushNotificationConfig":{"url":"https://hooks.example/a2a"}},"message":{"role":"ROLE_USER","messageId":"m1","contextId":"push-v03-field","parts":[{"text":"hi"}]}}}`)
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "configuration.taskPushNotificationConfig") {
		t.Fatalf("SendMessage with configuration.pushNotificationConfig: error %+v result %s, want -32602 naming configuration.taskPushNotificationConfig", r.Error, r.Result)
	}
	convs, err := s.ledger.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range convs {
		t.Errorf("conversation %q stored; want none", cv.ContextID)
	}
}
