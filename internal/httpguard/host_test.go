package httpguard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHosts(t *testing.T) {
	t.Parallel()
	hosts, err := NewHosts("gw.example.com", " A2A.Internal:8443 ", "")
	if err != nil {
		t.Fatal(err)
	}
	anyHost, err := NewHosts("*")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		want bool
	}{
		{"", true},
		{"localhost", true},
		{"LocalHost:9900", true},
		{"localhost.:9900", true},
		{"127.0.0.1:9900", true},
		{"[::1]:9900", true},
		{"[::1]", true},
		{"10.0.0.7", true},
		{"gw.example.com", true},
		{"GW.example.com:443", true},
		{"gw.example.com.", true},
		{"a2a.internal:8443", true},
		{"a2a.internal", false},
		{"a2a.internal:9900", false},
		{"evil.example", false},
		{"evil.example:9900", false},
		{"localhost.evil.example", false},
		{"127.0.0.1.nip.io:9900", false},
		{"gw.example.com.evil.example", false},
	}
	for _, tc := range tests {
		if got := hosts.Allowed(tc.host); got != tc.want {
			t.Errorf("Allowed(%q) = %v, want %v", tc.host, got, tc.want)
		}
		if !anyHost.Allowed(tc.host) {
			t.Errorf("with *: Allowed(%q) = false, want true", tc.host)
		}
	}
}

func TestNewHostsErrors(t *testing.T) {
	t.Parallel()
	for _, e := range []string{"https://gw.example.com/", "gw.example.com/a2a", "user@host", ":9900"} {
		if _, err := NewHosts(e); err == nil {
			t.Errorf("NewHosts(%q) error = nil, want one", e)
		}
	}
}

func TestHostsHandler(t *testing.T) {
	t.Parallel()
	hosts, err := NewHosts()
	if err != nil {
		t.Fatal(err)
	}
	h := hosts.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "served") }), "set --allowed-hosts")
	for _, tc := range []struct {
		host   string
		status int
		body   string
	}{
		{"localhost:1", http.StatusOK, "served"},
		{"evil.example", http.StatusMisdirectedRequest, `misdirected request: this server does not serve the host "evil.example"; set --allowed-hosts` + "\n"},
		{strings.Repeat("e", 300) + ".example", http.StatusMisdirectedRequest, `misdirected request: this server does not serve the host "` + strings.Repeat("e", 100) + `..."; set --allowed-hosts` + "\n"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = tc.host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status || w.Body.String() != tc.body {
			t.Errorf("Host %.20q: %d %q, want %d %q", tc.host, w.Code, w.Body.String(), tc.status, tc.body)
		}
		if tc.status != http.StatusOK && w.Header().Get("Connection") != "close" {
			t.Errorf("Host %.20q: refused without Connection: close", tc.host)
		}
	}
}
