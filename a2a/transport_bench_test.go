package a2a

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkTransportSendMessage is one v1.0 SendMessage through the HTTP transport and
// the Dispatcher (envelope decode, method lookup, params, the Handler, the encoded
// result), with a Handler that answers at once: the protocol layer's own cost per turn.
func BenchmarkTransportSendMessage(b *testing.B) {
	h := NewJSONRPCHandler(newWorldFake(), TransportConfig{Logger: slog.New(slog.DiscardHandler)})
	const body = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-1","contextId":"ctx-1","parts":[{"text":"hello"}]}}}`
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("A2A-Version", "1.0")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"result"`) {
			b.Fatalf("SendMessage answered %d %s", w.Code, w.Body)
		}
	}
}
