package push

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// TestRefusedAtDelivery: a delivery to a refused address is recorded as refused and
// nothing is sent: not to the receiver on 127.0.0.1 (the guard allows nothing here),
// nor anywhere else (an address that was dialled would fail as a retry, not a refusal).
func TestRefusedAtDelivery(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	port := rc.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	p := ":" + itoa(int(port))
	res := newResolver(map[string][]string{"hook.example": {"127.0.0.1"}})
	urls := []string{
		rc.URL + "/hook",
		"http://[::1]" + p + "/hook",
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1" + p + "/",
		"http://100.64.0.1" + p + "/",
		"http://hook.example" + p + "/hook",
	}
	o := &memOutbox{}
	for i, u := range urls {
		o.add(delivery("ev-"+itoa(i), "task-"+itoa(i), uint64(i+1), u))
	}
	opts := fastOptions(o)
	opts.Guard = NewGuard(GuardOptions{AllowHTTP: true, Resolver: res})
	run(t, opts)
	o.waitFinal(t, len(urls))
	for i, u := range urls {
		as := o.attempts("ev-" + itoa(i))
		if len(as) != 1 || as[0].Outcome != OutcomeRefused || !strings.Contains(as[0].Error, "refused") {
			t.Errorf("%s: attempts %+v, want one refused", u, as)
		}
	}
	if n := rc.count(); n != 0 {
		t.Errorf("the receiver on 127.0.0.1 got %d requests, want 0", n)
	}
}

// TestHTTPSOnly: without AllowHTTP an http webhook is refused at delivery, unsent.
func TestHTTPSOnly(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	opts := fastOptions(o)
	opts.Guard = NewGuard(GuardOptions{Allow: loopback})
	run(t, opts)
	o.waitFinal(t, 1)
	if as := o.attempts(""); as[0].Outcome != OutcomeRefused || !strings.Contains(as[0].Error, "only https") {
		t.Errorf("attempt %+v, want refused for http", as[0])
	}
	if rc.count() != 0 {
		t.Errorf("the receiver got %d requests, want 0", rc.count())
	}
}

// TestRedirectNotFollowed: a webhook that redirects to a loopback address is a failed
// attempt naming the redirect; the loopback target gets nothing and the webhook is not
// asked again for the redirect's path.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	target := newReceiver(t, nil)
	hook := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		http.Redirect(w, r, target.URL+"/internal", http.StatusFound)
	})
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, strings.Replace(hook.URL, "127.0.0.1", "public.example", 1)+"/hook"))
	opts := fastOptions(o)
	opts.RetryFor = time.Nanosecond // the first failure is final
	opts.Guard = NewGuard(GuardOptions{AllowHTTP: true, AllowHosts: []string{"public.example"},
		Resolver: newResolver(map[string][]string{"public.example": {"127.0.0.1"}})})
	run(t, opts)
	o.waitFinal(t, 1)
	a := o.attempts("")[0]
	if a.Status != http.StatusFound || !strings.Contains(a.Error, "redirect to "+target.URL+"/internal not followed") {
		t.Errorf("attempt %+v, want a 302 naming the redirect", a.Attempt)
	}
	if hook.count() != 1 || target.count() != 0 {
		t.Errorf("hook got %d requests, target %d; want 1 and 0", hook.count(), target.count())
	}
}

// TestDNSRebinding: the name is resolved once per attempt, and the address dialled is
// the one checked; the resolver's next answer (loopback, refused) is never used.
func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	res := newResolver(map[string][]string{"rebind.example": {"127.0.0.1", "10.0.0.1"}})
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, strings.Replace(rc.URL, "127.0.0.1", "rebind.example", 1)))
	opts := fastOptions(o)
	opts.Guard = NewGuard(GuardOptions{AllowHTTP: true, Allow: loopback, Resolver: res})
	run(t, opts)
	o.waitFinal(t, 1)
	if a := o.attempts("")[0]; a.Outcome != OutcomeDelivered {
		t.Errorf("attempt %+v, want delivered to the checked 127.0.0.1", a.Attempt)
	}
	if n := res.count("rebind.example"); n != 1 {
		t.Errorf("%d lookups for one attempt, want 1", n)
	}
	if rc.count() != 1 {
		t.Errorf("receiver got %d requests, want 1", rc.count())
	}
}

// TestDialCheck: the dialler refuses an address the guard refuses even when asked to
// dial it (the second line behind the lookup's check), and a dial with no checked target.
func TestDialCheck(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	g := NewGuard(GuardOptions{AllowHTTP: true})
	tr := newTransport(g, nil, 1, time.Second)
	defer tr.CloseIdleConnections()
	u, _ := url.Parse(rc.URL)
	tgt := &target{addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}, port: u.Port()}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, rc.URL, nil)
	_, err := tr.RoundTrip(req.WithContext(contextWith(req, tgt)))
	if !errors.Is(err, ErrRefused) {
		t.Errorf("dial of an unchecked loopback address: %v, want ErrRefused", err)
	}
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "without a checked target") {
		t.Errorf("dial without a target: %v", err)
	}
	if rc.count() != 0 {
		t.Errorf("receiver got %d requests, want 0", rc.count())
	}
}

// TestRetryThenDelivered: 500 three times, then 200: four attempts, recorded in order,
// each retry no earlier than the NextAt recorded before it, within the backoff bounds.
func TestRetryThenDelivered(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n < 3 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	opts := fastOptions(o)
	opts.MinBackoff, opts.MaxBackoff = 20*time.Millisecond, 60*time.Millisecond
	run(t, opts)
	o.waitFinal(t, 1)
	as, reqs := o.attempts(""), rc.requests()
	want := []Outcome{OutcomeRetry, OutcomeRetry, OutcomeRetry, OutcomeDelivered}
	if len(as) != 4 || len(reqs) != 4 {
		t.Fatalf("%d attempts recorded, %d requests; want 4 and 4", len(as), len(reqs))
	}
	for i, a := range as {
		if a.Outcome != want[i] || (i < 3) != (a.Status == 500) {
			t.Errorf("attempt %d: %s %d, want %s", i+1, a.Outcome, a.Status, want[i])
		}
		if i == 3 {
			break
		}
		// The exact bounds are TestBackoffBounds'; here the wait counts from the end of
		// the answer, and a busy machine may add its delays before the retry is scheduled.
		if wait := a.NextAt.Sub(a.At.Add(a.Latency)); wait < opts.MinBackoff || wait > opts.MaxBackoff+2*time.Second {
			t.Errorf("attempt %d: retry after %v, want %v to about %v", i+1, wait, opts.MinBackoff, opts.MaxBackoff)
		}
		if reqs[i+1].At.Before(a.NextAt) {
			t.Errorf("attempt %d was sent at %v, before the recorded NextAt %v", i+2, reqs[i+1].At, a.NextAt)
		}
		if !as[i+1].At.After(a.At) {
			t.Errorf("attempts recorded out of order: %v then %v", a.At, as[i+1].At)
		}
	}
	for _, r := range reqs {
		if id := r.Header.Get("X-A2A-Event-Id"); id != "ev-1" {
			t.Errorf("X-A2A-Event-Id %q on a retry, want the same ev-1", id)
		}
	}
}

// TestPerTaskOrder: two tasks interleaved. Task a's first delivery is held by the
// receiver until all of task b's have arrived (b does not wait for a), then fails once;
// a's later deliveries come only after its first was delivered.
func TestPerTaskOrder(t *testing.T) {
	t.Parallel()
	var bSeen, a1Tries atomic.Int32
	bAll := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		switch id := r.Header.Get("X-A2A-Event-Id"); {
		case strings.HasPrefix(id, "b"):
			if bSeen.Add(1) == 3 {
				close(bAll)
			}
		case id == "a1" && a1Tries.Add(1) == 1:
			select { // hold a1 until every b has come (or the attempt times out)
			case <-bAll:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	o := &memOutbox{}
	for i, id := range []string{"a1", "b1", "a2", "b2", "a3", "b3"} {
		o.add(delivery(id, "task-"+id[:1], uint64(i+1), rc.URL))
	}
	run(t, fastOptions(o))
	o.waitFinal(t, 6)
	var aOrder, bOrder []string
	for _, r := range rc.requests() {
		id := r.Header.Get("X-A2A-Event-Id")
		if id[0] == 'a' {
			aOrder = append(aOrder, id)
		} else {
			bOrder = append(bOrder, id)
		}
	}
	if got := strings.Join(aOrder, ","); got != "a1,a1,a2,a3" {
		t.Errorf("task a's requests: %s, want a1,a1,a2,a3", got)
	}
	if got := strings.Join(bOrder, ","); got != "b1,b2,b3" {
		t.Errorf("task b's requests: %s, want b1,b2,b3", got)
	}
}

// TestPerHostLimit: with PerHost 2, five tasks to one host never have more than two
// requests in flight there.
func TestPerHostLimit(t *testing.T) {
	t.Parallel()
	var inflight, peak atomic.Int32
	release := make(chan struct{})
	rc := newReceiver(t, func(http.ResponseWriter, *http.Request, int) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
	})
	o := &memOutbox{}
	for i := range 5 {
		o.add(delivery("ev-"+itoa(i), "task-"+itoa(i), uint64(i+1), rc.URL))
	}
	opts := fastOptions(o)
	opts.PerHost = 2
	run(t, opts)
	testutil.WaitFor(t, "two requests in flight", func() bool { return inflight.Load() == 2 })
	close(release)
	o.waitFinal(t, 5)
	if p := peak.Load(); p != 2 {
		t.Errorf("at most %d requests in flight to the host, want 2", p)
	}
}

// TestExpiry: a delivery whose retry window has passed gets one last attempt and is
// given up when it fails; one retried until the window ends is given up at its end.
func TestExpiry(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusBadGateway) })
	o := &memOutbox{}
	old := delivery("old", "task-old", 1, rc.URL)
	old.Created = time.Now().Add(-25 * time.Hour)
	young := delivery("young", "task-young", 2, rc.URL)
	o.add(old, young)
	opts := fastOptions(o)
	opts.RetryFor = 25*time.Hour + time.Second // young: a second of retries, 5 to 20 ms apart
	opts.Now = func() time.Time { return time.Now().Add(25 * time.Hour) }
	run(t, opts)
	o.waitFinal(t, 2)
	if as := o.attempts("old"); len(as) != 1 || as[0].Outcome != OutcomeExpired || !strings.Contains(as[0].Error, "HTTP 502; given up") {
		t.Errorf("old: %+v, want one attempt, expired", as)
	}
	as := o.attempts("young")
	last := as[len(as)-1]
	end := young.Created.Add(opts.RetryFor)
	if len(as) < 2 || last.Outcome != OutcomeExpired || last.At.Before(as[len(as)-2].NextAt) {
		t.Errorf("young: %d attempts, last %s at %v; want retries, then expired", len(as), last.Outcome, last.At)
	}
	for _, a := range as[:len(as)-1] {
		if a.Outcome != OutcomeRetry || a.NextAt.After(end) {
			t.Errorf("young: %s with next at %v, want retries no later than %v", a.Outcome, a.NextAt, end)
		}
	}
	if rc.count() != 1+len(as) {
		t.Errorf("receiver got %d requests, want %d (one per attempt)", rc.count(), 1+len(as))
	}
}

// TestSignedRequest: the request carries its headers and a signature that verifies
// against the signer's JWKS and the exact body, and fails for a changed body.
func TestSignedRequest(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	o := &memOutbox{}
	d := delivery("ev-1", "task-1", 1, rc.URL)
	d.Token, d.AuthScheme, d.AuthCredentials = "tok-1", "Bearer", "cred-1"
	o.add(d)
	opts := fastOptions(o)
	run(t, opts)
	o.waitFinal(t, 1)
	r := rc.requests()[0]
	for h, want := range map[string]string{"Content-Type": "application/a2a+json", "X-A2A-Notification-Token": "tok-1",
		"Authorization": "Bearer cred-1", "X-A2A-Event-Id": "ev-1"} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	sig := r.Header.Get(SignatureHeader)
	c, err := Verify(opts.Signer.JWKS(), sig, r.Body)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if c.ID != "ev-1" || c.TaskID != "task-1" || c.ContextID != "ctx-task-1" || time.Since(time.Unix(c.IssuedAt, 0)) > time.Minute {
		t.Errorf("claims %+v", c)
	}
	if _, err := Verify(opts.Signer.JWKS(), sig, append(r.Body, ' ')); !errors.Is(err, ErrBadSignature) {
		t.Errorf("Verify of a changed body: %v, want ErrBadSignature", err)
	}
}

// TestHTTPS: an https webhook is reached on the checked address with the URL's host as
// the TLS server name (the test certificate is for example.com).
func TestHTTPS(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, strings.Replace(srv.URL, "127.0.0.1", "example.com", 1)))
	opts := fastOptions(o)
	opts.TLSConfig = &tls.Config{RootCAs: roots}
	opts.Guard = NewGuard(GuardOptions{Allow: loopback, Resolver: newResolver(map[string][]string{"example.com": {"127.0.0.1"}})})
	run(t, opts)
	o.waitFinal(t, 1)
	if a := o.attempts("")[0]; a.Outcome != OutcomeDelivered || n.Load() != 1 {
		t.Errorf("attempt %+v, %d requests; want delivered once", a.Attempt, n.Load())
	}
	srv.CloseClientConnections()
}

// TestBodyCap: an answer whose body never ends is read up to MaxBody only: the attempt
// ends (delivered, a 2xx) long before its timeout, and the receiver's writes fail.
func TestBodyCap(t *testing.T) {
	t.Parallel()
	stopped := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		defer close(stopped)
		chunk := make([]byte, 32<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return // the deliverer hung up
			}
		}
	})
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	opts := fastOptions(o)
	opts.Timeout = 5 * time.Minute // the cap, not the timeout, must end the attempt
	run(t, opts)
	o.waitFinal(t, 1)
	if a := o.attempts("")[0]; a.Outcome != OutcomeDelivered {
		t.Errorf("attempt %+v, want delivered", a.Attempt)
	}
	testutil.Closed(t, stopped, "the receiver's endless body to be cut")
}

// TestTimeout: a receiver that never answers costs one Timeout per attempt, recorded as
// a failed attempt to retry.
func TestTimeout(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) { <-r.Context().Done() })
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	opts := fastOptions(o)
	opts.Timeout = 100 * time.Millisecond
	opts.MinBackoff, opts.MaxBackoff = time.Hour, time.Hour
	run(t, opts)
	testutil.WaitFor(t, "an attempt recorded", func() bool { return len(o.attempts("")) == 1 })
	a := o.attempts("")[0]
	if a.Outcome != OutcomeRetry || a.Error != "no answer within the attempt timeout (100ms)" || a.Latency < opts.Timeout {
		t.Errorf("attempt %+v, want a retry after the timeout", a.Attempt)
	}
}

// TestNotify: a delivery added while Run waits for a long poll goes out at Notify.
func TestNotify(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	o := &memOutbox{}
	opts := fastOptions(o)
	opts.Poll = time.Hour
	dl := run(t, opts)
	testutil.WaitFor(t, "Run's first read of the outbox", func() bool { o.mu.Lock(); defer o.mu.Unlock(); return o.pending > 0 })
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	dl.Notify()
	o.waitFinal(t, 1)
}

// TestClaimLost: a delivery another instance claimed is not sent here.
func TestClaimLost(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	var claims atomic.Int32
	o := &memOutbox{claim: func(Delivery) (bool, error) { claims.Add(1); return false, nil }}
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	run(t, fastOptions(o))
	testutil.WaitFor(t, "two claims", func() bool { return claims.Load() >= 2 })
	if rc.count() != 0 || len(o.attempts("")) != 0 {
		t.Errorf("%d requests, %d attempts after a lost claim; want none", rc.count(), len(o.attempts("")))
	}
}

func TestNewDelivererNeedsItsParts(t *testing.T) {
	t.Parallel()
	if _, err := NewDeliverer(Options{Outbox: &memOutbox{}}); err == nil {
		t.Error("NewDeliverer without a Guard and a Signer: no error")
	}
	o := fastOptions(&memOutbox{})
	o.Timeout = -1
	if _, err := NewDeliverer(o); err == nil {
		t.Error("NewDeliverer with a negative timeout: no error")
	}
}

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	minB, maxB := time.Second, 5*time.Minute
	for n := 1; n <= 80; n++ {
		ceil := maxB
		if n < 20 {
			ceil = min(maxB, minB<<(n-1))
		}
		for range 50 {
			if b := backoff(minB, maxB, n); b < minB || b > ceil {
				t.Fatalf("backoff(%d) = %v, want %v to %v", n, b, minB, ceil)
			}
		}
	}
}

// TestStopCutsAttempt: stopping Run while an attempt waits for a slow receiver ends it
// at once (not at the attempt's timeout) and records nothing: the delivery stays
// pending for the next start.
func TestStopCutsAttempt(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	opts := fastOptions(o)
	opts.Timeout = 10 * time.Minute
	dl, err := NewDeliverer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- dl.Run(ctx) }()
	testutil.Receive(t, arrived, "the request at the receiver")
	cancel()
	if err := testutil.Receive(t, done, "Run to return after the stop"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if as := o.attempts(""); len(as) != 0 {
		t.Errorf("attempts recorded for a cut attempt: %+v", as)
	}
	if err := dl.Run(t.Context()); err == nil {
		t.Error("a second Run: no error")
	}
}

// TestResume: a second deliverer on the same outbox (a restart) goes on where the first
// stopped: the attempt count continues and the delivery arrives.
func TestResume(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	fail.Store(true)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		if fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	opts := fastOptions(o)
	dl, err := NewDeliverer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- dl.Run(ctx) }()
	testutil.WaitFor(t, "two failed attempts", func() bool { return len(o.attempts("")) >= 2 })
	cancel()
	testutil.Receive(t, done, "the first deliverer to stop")
	before := len(o.attempts(""))
	fail.Store(false)
	run(t, opts)
	o.waitFinal(t, 1)
	as := o.attempts("")
	if last := as[len(as)-1]; last.Outcome != OutcomeDelivered || len(as) != before+1 {
		t.Errorf("after the restart: %d attempts (%d before), last %s; want one more, delivered", len(as), before, last.Outcome)
	}
	// An attempt the stop cut short is sent but not recorded (at least once).
	if n := rc.count(); n != len(as) && n != len(as)+1 {
		t.Errorf("receiver got %d requests for %d recorded attempts", n, len(as))
	}
}

// TestUnresolvedRetried: a host that does not resolve is a failed attempt to retry (DNS
// may be down), never a refusal, and nothing is sent.
func TestUnresolvedRetried(t *testing.T) {
	t.Parallel()
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, "http://nowhere.example/hook"))
	opts := fastOptions(o)
	opts.MinBackoff, opts.MaxBackoff = time.Hour, time.Hour
	opts.Guard = NewGuard(GuardOptions{AllowHTTP: true, Resolver: newResolver(nil)})
	run(t, opts)
	testutil.WaitFor(t, "an attempt recorded", func() bool { return len(o.attempts("")) == 1 })
	if a := o.attempts("")[0]; a.Outcome != OutcomeRetry || !strings.Contains(a.Error, "does not resolve") {
		t.Errorf("attempt %+v, want a retry saying the host does not resolve", a.Attempt)
	}
}
