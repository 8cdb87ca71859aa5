package a2a

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestJSONContentType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ct   string
		want bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"APPLICATION/JSON", true},
		{"application/a2a+json", true},
		{"", false},
		{"text/plain", false},
		{"text/plain; charset=utf-8", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=x", false},
		{"application/jsonx", false},
		{"text/json", false},
		{"application/json; =broken", false},
	} {
		if got := jsonContentType(tc.ct); got != tc.want {
			t.Errorf("jsonContentType(%q) = %v, want %v", tc.ct, got, tc.want)
		}
	}
}

// unreadBody fails the test when read: a refused request's body is never read.
type unreadBody struct{ t *testing.T }

func (b unreadBody) Read([]byte) (int, error) {
	b.t.Errorf("the body of a request with the wrong Content-Type was read")
	return 0, nil
}

// TestWrongContentType: a POST that is not JSON is -32005 in a 200 envelope with a null
// id (what the A2A TCK expects), its body unread, the connection closed after the answer.
func TestWrongContentType(t *testing.T) {
	t.Parallel()
	for _, v1 := range []bool{false, true} {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/", unreadBody{t})
		r.Header.Set("Content-Type", "text/plain")
		if v1 {
			r.Header.Set("A2A-Version", "1.0")
		}
		w := httptest.NewRecorder()
		NewJSONRPCHandler(newWorldFake(), TransportConfig{Logger: discardLogger()}).ServeHTTP(w, r)
		var resp struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || w.Code != http.StatusOK {
			t.Fatalf("v1 %v: HTTP %d %q, want 200 and a JSON-RPC error", v1, w.Code, w.Body.String())
		}
		if resp.Error.Code != -32005 || string(resp.ID) != "null" || !strings.Contains(resp.Error.Message, "application/json") {
			t.Errorf("v1 %v: %s, want -32005 with a null id and a message naming application/json", v1, w.Body.String())
		}
		if v1 && !strings.Contains(string(resp.Error.Data), "CONTENT_TYPE_NOT_SUPPORTED") {
			t.Errorf("v1: error data %s, want the CONTENT_TYPE_NOT_SUPPORTED reason", resp.Error.Data)
		}
		if got := w.Header().Get("Connection"); got != "close" {
			t.Errorf("v1 %v: Connection %q, want close", v1, got)
		}
	}
}
