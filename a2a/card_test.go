package a2a

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/google/go-cmp/cmp"
)

// cardBothShapes is the subset of the union card that v1.0 and v0.3 clients read.
type cardBothShapes struct {
	Name                string `json:"name"`
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"supportedInterfaces"`
	ProtocolVersion      string `json:"protocolVersion"`
	URL                  string `json:"url"`
	PreferredTransport   string `json:"preferredTransport"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`
	Capabilities struct {
		Streaming         *bool `json:"streaming"`
		PushNotifications *bool `json:"pushNotifications"`
		Extensions        []struct {
			URI      string `json:"uri"`
			Required bool   `json:"required"`
		} `json:"extensions"`
	} `json:"capabilities"`
	DefaultInputModes  []string          `json:"defaultInputModes"`
	DefaultOutputModes []string          `json:"defaultOutputModes"`
	Skills             []json.RawMessage `json:"skills"`
	Version            string            `json:"version"`
	Description        string            `json:"description"`
}

func getCard(t *testing.T, h http.Handler, host string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, CardPath, nil)
	if host != "" {
		r.Host = host
	}
	for _, hv := range headers {
		name, value, _ := strings.Cut(hv, ":")
		r.Header.Set(name, strings.TrimSpace(value))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func parseCard(t *testing.T, b []byte) cardBothShapes {
	t.Helper()
	var c cardBothShapes
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("card %s: %v", b, err)
	}
	return c
}

// TestCardServedOverHTTP fetches the card from a real server on 127.0.0.1 and reads it
// as both a v1.0 and a v0.3 card; its URL follows the Host the request reached.
func TestCardServedOverHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewCardHandler(CardConfig{}))
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+CardPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET card: HTTP %d", resp.StatusCode)
	}
	wantURL := srv.URL + "/"
	c := parseCard(t, b)
	checkCard(t, c, wantURL)
}

func checkCard(t *testing.T, c cardBothShapes, wantURL string) {
	t.Helper()
	// v1.0 shape.
	if len(c.SupportedInterfaces) == 0 {
		t.Fatalf("card has no supportedInterfaces")
	}
	first := c.SupportedInterfaces[0]
	if first.URL != wantURL || first.ProtocolBinding != "JSONRPC" || first.ProtocolVersion != "1.0" {
		t.Errorf("supportedInterfaces[0] = %+v, want {%s JSONRPC 1.0} (the first is preferred)", first, wantURL)
	}
	for i, si := range c.SupportedInterfaces {
		if si.URL != wantURL {
			t.Errorf("supportedInterfaces[%d].url = %q, want %q", i, si.URL, wantURL)
		}
	}
	// v0.3 shape.
	if c.ProtocolVersion != "0.3.0" {
		t.Errorf("protocolVersion = %q, want 0.3.0", c.ProtocolVersion)
	}
	if c.URL != wantURL {
		t.Errorf("url = %q, want %q", c.URL, wantURL)
	}
	if c.PreferredTransport != "JSONRPC" {
		t.Errorf("preferredTransport = %q, want JSONRPC", c.PreferredTransport)
	}
	for i, ai := range c.AdditionalInterfaces {
		if ai.URL != wantURL || ai.Transport != "JSONRPC" {
			t.Errorf("additionalInterfaces[%d] = %+v, want {%s JSONRPC}", i, ai, wantURL)
		}
	}
	// Both.
	if c.Capabilities.Streaming == nil || !*c.Capabilities.Streaming {
		t.Errorf("capabilities.streaming = %v, want true", c.Capabilities.Streaming)
	}
	if c.Capabilities.PushNotifications != nil && *c.Capabilities.PushNotifications {
		t.Errorf("capabilities.pushNotifications = true, want false (push methods answer -32003)")
	}
	var uris []string
	for _, e := range c.Capabilities.Extensions {
		uris = append(uris, e.URI)
		if e.Required {
			t.Errorf("extension %s is required, want optional", e.URI)
		}
	}
	if diff := cmp.Diff([]string{ExtAppendOnly, ExtHistoryBoundary}, uris); diff != "" {
		t.Errorf("capabilities.extensions URIs (-want +got):\n%s", diff)
	}
	if c.Name == "" || c.Description == "" || c.Version == "" || len(c.Skills) == 0 || len(c.DefaultInputModes) == 0 || len(c.DefaultOutputModes) == 0 {
		t.Errorf("card lacks a required field: %+v", c)
	}
}

func TestCardURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     CardConfig
		host    string
		headers []string
		wantURL string
	}{
		{name: "from Host", host: "gw.example:8443", wantURL: "http://gw.example:8443/"},
		{name: "another Host", host: "10.1.2.3", wantURL: "http://10.1.2.3/"},
		{name: "forwarded https", host: "gw.example", headers: []string{"X-Forwarded-Proto: https"}, wantURL: "https://gw.example/"},
		{name: "forwarded garbage ignored", host: "gw.example", headers: []string{"X-Forwarded-Proto: javascript"}, wantURL: "http://gw.example/"},
		{name: "configured URL wins", cfg: CardConfig{URL: "https://public.example/a2a"}, host: "internal:8080", wantURL: "https://public.example/a2a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := getCard(t, NewCardHandler(tc.cfg), tc.host, tc.headers...)
			if w.Code != http.StatusOK {
				t.Fatalf("HTTP %d", w.Code)
			}
			checkCard(t, parseCard(t, w.Body.Bytes()), tc.wantURL)
		})
	}
}

func TestCardCaching(t *testing.T) {
	t.Parallel()
	h := NewCardHandler(CardConfig{})
	first := getCard(t, h, "gw.example")
	etag := first.Header().Get("ETag")
	if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 3 {
		t.Fatalf("ETag = %q, want a quoted entity tag", etag)
	}
	if cc := first.Header().Get("Cache-Control"); !strings.Contains(cc, "max-age=") {
		t.Errorf("Cache-Control = %q, want a max-age", cc)
	}
	if ct := first.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if again := getCard(t, h, "gw.example"); again.Header().Get("ETag") != etag || again.Body.String() != first.Body.String() {
		t.Errorf("second GET: ETag %q, want %q (and the same body)", again.Header().Get("ETag"), etag)
	}
	if other := getCard(t, h, "other.example"); other.Header().Get("ETag") == etag {
		t.Errorf("a card for another Host has the same ETag %q", etag)
	}

	tests := []struct {
		name        string
		ifNoneMatch string
		wantStatus  int
	}{
		{"matching", etag, http.StatusNotModified},
		{"in a list", `"stale", ` + etag, http.StatusNotModified},
		{"weak", "W/" + etag, http.StatusNotModified},
		{"stale", `"0123456789abcdef"`, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := getCard(t, h, "gw.example", "If-None-Match: "+tc.ifNoneMatch)
			if w.Code != tc.wantStatus {
				t.Fatalf("If-None-Match %s: HTTP %d, want %d", tc.ifNoneMatch, w.Code, tc.wantStatus)
			}
			if tc.wantStatus == http.StatusNotModified {
				if w.Body.Len() != 0 {
					t.Errorf("304 has a body of %d bytes", w.Body.Len())
				}
				if got := w.Header().Get("ETag"); got != etag {
					t.Errorf("304 ETag = %q, want %q", got, etag)
				}
			}
		})
	}
}

func TestCardMethods(t *testing.T) {
	t.Parallel()
	h := NewCardHandler(CardConfig{})
	for _, tc := range []struct {
		method string
		want   int
	}{
		{http.MethodHead, http.StatusOK},
		{http.MethodPost, http.StatusMethodNotAllowed},
		{http.MethodPut, http.StatusMethodNotAllowed},
	} {
		r := httptest.NewRequestWithContext(t.Context(), tc.method, CardPath, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s card: HTTP %d, want %d", tc.method, w.Code, tc.want)
		}
	}
}

// TestCardA2AGo decodes the served card with the real a2a-go v0.3 AgentCard type, as a
// v0.3 Go client resolves it.
func TestCardA2AGo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  CardConfig
	}{
		{"defaults", CardConfig{}},
		{"bearer auth", CardConfig{Name: "gw", BearerAuth: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := getCard(t, NewCardHandler(tc.cfg), "gw.example:9000")
			var c a2ago.AgentCard
			if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil {
				t.Fatalf("a2a-go AgentCard: %v\ncard: %s", err, w.Body)
			}
			wantName := tc.cfg.Name
			if wantName == "" {
				wantName = "A2A conversation gateway"
			}
			if c.Name != wantName {
				t.Errorf("Name = %q, want %q", c.Name, wantName)
			}
			if c.URL != "http://gw.example:9000/" {
				t.Errorf("URL = %q, want http://gw.example:9000/", c.URL)
			}
			if c.PreferredTransport != a2ago.TransportProtocolJSONRPC {
				t.Errorf("PreferredTransport = %q, want JSONRPC", c.PreferredTransport)
			}
			if !c.Capabilities.Streaming {
				t.Errorf("Capabilities.Streaming = false, want true")
			}
			if c.Capabilities.PushNotifications {
				t.Errorf("Capabilities.PushNotifications = true, want false")
			}
			if c.ProtocolVersion != "0.3.0" {
				t.Errorf("ProtocolVersion = %q, want 0.3.0", c.ProtocolVersion)
			}
			if len(c.Capabilities.Extensions) != 2 {
				t.Errorf("%d extensions, want 2", len(c.Capabilities.Extensions))
			}
			if tc.cfg.BearerAuth {
				if _, ok := c.SecuritySchemes["bearer"]; !ok || len(c.Security) != 1 {
					t.Errorf("SecuritySchemes = %v, Security = %v; want the bearer scheme required", c.SecuritySchemes, c.Security)
				}
			}
		})
	}
}

func TestBuildCardDefaultsAndConfig(t *testing.T) {
	t.Parallel()
	c := BuildCard(CardConfig{Name: "n", Description: "d", Version: "9.9.9"}, "https://x.example/")
	if c.Name != "n" || c.Description != "d" || c.Version != "9.9.9" {
		t.Errorf("BuildCard kept %q %q %q, want n d 9.9.9", c.Name, c.Description, c.Version)
	}
	if c.SecuritySchemes != nil || c.Security != nil || c.SecurityRequirements != nil {
		t.Errorf("card without BearerAuth declares security: %+v %+v %+v", c.SecuritySchemes, c.Security, c.SecurityRequirements)
	}
	b := BuildCard(CardConfig{BearerAuth: true}, "https://x.example/")
	if b.SecuritySchemes == nil || len(b.Security) != 1 || len(b.SecurityRequirements) != 1 {
		t.Errorf("card with BearerAuth: %+v %+v %+v, want the bearer scheme in both shapes", b.SecuritySchemes, b.Security, b.SecurityRequirements)
	}
}

// TestCardExtensionParams: an extension's params are published, a CardURL resolved on
// the card's endpoint, in both card shapes.
func TestCardExtensionParams(t *testing.T) {
	t.Parallel()
	cfg := CardConfig{URL: "https://gw.example/a2a", Extensions: []CardExtension{{URI: "urn:x", Description: "d",
		Params: map[string]any{"jwksUrl": CardURL("/.well-known/jwks.json"), "alg": "EdDSA"}}}}
	c := BuildCard(cfg, cfg.URL)
	for name, exts := range map[string][]cardExtension{"union": c.Capabilities.Extensions, "v1.0": c.V1().Capabilities.Extensions} {
		got := exts[len(exts)-1].Params
		if got["jwksUrl"] != "https://gw.example/.well-known/jwks.json" || got["alg"] != "EdDSA" {
			t.Errorf("%s card: params %v", name, got)
		}
	}
	b, _ := json.Marshal(c)
	if strings.Count(string(b), `"params"`) != 1 {
		t.Errorf("card %s: want params on the one extension that has them", b)
	}
}
