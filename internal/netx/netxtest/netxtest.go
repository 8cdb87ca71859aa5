package netxtest

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// childEnv names the test a child process runs the check for.
const childEnv = "NETX_DRIFT_CHILD"

// proxyURL is the proxy the child's environment names; it is never dialled.
const proxyURL = "http://proxy.invalid:3128"

// CheckDirect checks the proxy func that newProxy returns (the Proxy of the caller's
// transport) under an environment that names a proxy: a CGNAT (Tailscale) host, a private
// host and localhost must be reached directly, and a public host through the proxy (which
// shows the environment's proxy is in effect, so the check cannot pass vacuously).
//
// net/http reads the proxy environment once per process, so the check runs in a child
// process (the test binary itself, running only the calling test) with HTTP_PROXY and
// HTTPS_PROXY set. The calling test must be a top-level test and call CheckDirect before
// anything else that depends on the environment.
func CheckDirect(t *testing.T, newProxy func() func(*http.Request) (*url.URL, error)) {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		check(t, newProxy())
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(),
		childEnv+"="+t.Name(),
		"HTTP_PROXY="+proxyURL, "http_proxy="+proxyURL,
		"HTTPS_PROXY="+proxyURL, "https_proxy="+proxyURL,
		"NO_PROXY=", "no_proxy=", "REQUEST_METHOD=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the direct-dial check in a child process with HTTP_PROXY set failed: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^--- PASS: ` + regexp.QuoteMeta(t.Name()) + `\b`).Match(out) {
		t.Fatalf("the child process did not run %s:\n%s", t.Name(), out)
	}
}

func check(t *testing.T, proxy func(*http.Request) (*url.URL, error)) {
	t.Helper()
	if proxy == nil {
		t.Fatal("the transport has no Proxy func: it reaches every host directly, want the environment's proxy for public hosts")
	}
	for _, tt := range []struct {
		url    string
		direct bool
	}{
		{"http://100.64.0.1:9900/", true},   // Tailscale (CGNAT)
		{"https://100.101.102.103/", true},  // Tailscale (CGNAT)
		{"http://192.168.1.10:9900/", true}, // LAN
		{"http://localhost:9900/", true},
		{"https://agent.example/", false},
		{"https://8.8.8.8/", false},
	} {
		req, err := http.NewRequest(http.MethodPost, tt.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := proxy(req)
		if err != nil {
			t.Fatalf("Proxy(%s) error = %v", tt.url, err)
		}
		if direct := got == nil; direct != tt.direct {
			t.Errorf("Proxy(%s) = %v, want direct %v (HTTP_PROXY=%s)", tt.url, got, tt.direct, proxyURL)
		}
	}
}
