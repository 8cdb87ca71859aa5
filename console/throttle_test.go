package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestLoginSuccessResetsFailures: a correct login forgets the address's wrong tokens, so
// an operator who mistyped a few times before logging in starts the next login with
// every try; wrong tokens are still throttled after that.
func TestLoginSuccessResetsFailures(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "s3cret")
	c := client(t)
	_, body := get(t, c, srv.URL+"/console/login")
	csrf := csrfOf(t, body)
	login := func(token string) int {
		resp, _ := post(t, c, srv.URL+"/console/login", url.Values{"token": {token}, "csrf": {csrf}})
		return resp.StatusCode
	}
	for i := range maxFails - 1 {
		if got := login("wrong"); got != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i, got)
		}
	}
	if got := login("s3cret"); got != http.StatusSeeOther {
		t.Fatalf("the right token after %d wrong ones: %d, want 303", maxFails-1, got)
	}
	for i := range maxFails {
		if got := login("wrong"); got != http.StatusUnauthorized {
			t.Fatalf("wrong token %d after a login: %d, want 401 (the login reset the count)", i, got)
		}
	}
	if got := login("wrong"); got != http.StatusTooManyRequests {
		t.Fatalf("wrong token after %d more: %d, want 429", maxFails, got)
	}
}

// TestLoginPageSaysLockout: the login page says that too many wrong tokens lock the
// address out, the right token included, and why; a locked-out address is told how long
// it still waits.
func TestLoginPageSaysLockout(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "s3cret")
	c := client(t)
	_, body := get(t, c, srv.URL+"/console/login")
	const note = "the right one included: a login that let the right token through would tell someone guessing which guess was right"
	if !strings.Contains(body, note) {
		t.Errorf("the login page does not say the lockout holds the right token too:\n%s", body)
	}
	csrf := csrfOf(t, body)
	for range maxFails {
		post(t, c, srv.URL+"/console/login", url.Values{"token": {"wrong"}, "csrf": {csrf}})
	}
	resp, body := post(t, c, srv.URL+"/console/login", url.Values{"token": {"s3cret"}, "csrf": {csrf}})
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after %d wrong tokens: %d, want 429", maxFails, resp.StatusCode)
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 1 || secs > int(failWindow.Seconds()) {
		t.Fatalf("Retry-After %q, want 1..%d", resp.Header.Get("Retry-After"), int(failWindow.Seconds()))
	}
	if want := "no token from this address is checked for " + strconv.Itoa(secs) + " s more"; !strings.Contains(body, want) || !strings.Contains(body, note) {
		t.Errorf("the refusal does not say %q and why:\n%s", want, body)
	}
}

// bearerStatus is the status of GET /console/ from remote with the token as a bearer.
func bearerStatus(h http.Handler, remote, token string) int {
	req := httpRequest("/console/")
	req.RemoteAddr = remote
	req.Header.Set("Authorization", "Bearer "+token)
	return recorder(h, req).Code
}

// TestBearerGuessesThrottled: the console also takes the admin token as a bearer; wrong
// bearers count against the address as wrong logins do, and a locked-out address's
// bearer is not compared (or the bearer would be a way around the login's bound). An
// IPv6 client counts as its /64.
func TestBearerGuessesThrottled(t *testing.T) {
	t.Parallel()
	h, err := New(Config{Service: fakeService{convs: convs}, AdminToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, guesser, neighbour, elsewhere string }{
		{"IPv4", "192.0.2.7:4000", "192.0.2.7:4001", "192.0.2.8:4000"},
		{"IPv6 /64", "[2001:db8::1]:4000", "[2001:db8::ffff]:4000", "[2001:db8:0:1::1]:4000"},
	} {
		for i := range maxFails {
			if got := bearerStatus(h, tc.guesser, "wrong"); got != http.StatusSeeOther {
				t.Fatalf("%s: wrong bearer %d: %d, want 303 to the login page", tc.name, i, got)
			}
		}
		if got := bearerStatus(h, tc.neighbour, "s3cret"); got != http.StatusTooManyRequests {
			t.Errorf("%s: the right bearer from the locked-out source: %d, want 429", tc.name, got)
		}
		if got := bearerStatus(h, tc.elsewhere, "s3cret"); got != http.StatusOK {
			t.Errorf("%s: the right bearer from another source: %d, want 200", tc.name, got)
		}
	}
}
