package push

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memOutbox is an in-memory Outbox for this package's tests only (the durable one is
// turn's, over the ledger): it keeps the deliveries, their attempts in the order
// recorded, and what a real outbox would update (Attempts, NextAt, finality).
type memOutbox struct {
	mu       sync.Mutex
	items    []*memItem
	recorded []recorded
	claim    func(Delivery) (bool, error) // nil: always true
	pending  int                          // Pending calls
}

type memItem struct {
	d     Delivery
	final bool
}

type recorded struct {
	ID string
	Attempt
}

func (o *memOutbox) add(ds ...Delivery) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range ds {
		o.items = append(o.items, &memItem{d: d})
	}
}

func (o *memOutbox) Pending(_ context.Context, limit int) ([]Delivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending++
	var out []Delivery
	for _, it := range o.items {
		if !it.final && len(out) < limit {
			out = append(out, it.d)
		}
	}
	slices.SortStableFunc(out, func(a, b Delivery) int { return int(a.Seq) - int(b.Seq) })
	return out, nil
}

func (o *memOutbox) Claim(_ context.Context, d Delivery) (bool, error) {
	if o.claim != nil {
		return o.claim(d)
	}
	return true, nil
}

func (o *memOutbox) Record(_ context.Context, d Delivery, a Attempt) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, it := range o.items {
		if it.d.ID != d.ID {
			continue
		}
		if it.final {
			return fmt.Errorf("delivery %s recorded after its final attempt", d.ID)
		}
		it.d.Attempts++
		it.d.NextAt = a.NextAt
		it.final = a.Final()
		o.recorded = append(o.recorded, recorded{d.ID, a})
		return nil
	}
	return fmt.Errorf("no delivery %s", d.ID)
}

// attempts returns the recorded attempts (of id only, unless id is "").
func (o *memOutbox) attempts(id string) []recorded {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []recorded
	for _, r := range o.recorded {
		if id == "" || r.ID == id {
			out = append(out, r)
		}
	}
	return out
}

// finals returns how many deliveries are final.
func (o *memOutbox) finals() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, it := range o.items {
		if it.final {
			n++
		}
	}
	return n
}

// waitFinal waits until n deliveries are final.
func (o *memOutbox) waitFinal(t *testing.T, n int) {
	t.Helper()
	testutil.WaitFor(t, fmt.Sprintf("%d final deliveries", n), func() bool { return o.finals() >= n })
}

// receiver is a real HTTP webhook on 127.0.0.1 that answers with handle (nil: 200) and
// keeps every request it got.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []got
	handle func(w http.ResponseWriter, r *http.Request, n int) // n: this request's index
}

type got struct {
	At     time.Time
	Header http.Header
	Body   []byte
}

func newReceiver(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int)) *receiver {
	t.Helper()
	rc := &receiver{handle: handle}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, got{At: time.Now(), Header: r.Header.Clone(), Body: body})
		rc.mu.Unlock()
		if rc.handle != nil {
			rc.handle(w, r, n)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []got {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

func (rc *receiver) count() int { return len(rc.requests()) }

// loopback allows 127.0.0.1, where the test receivers listen.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// testSigner is a fixed key, so failures are reproducible.
func testSigner() *Signer {
	return NewSigner(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
}

// fastOptions are Options for tests: loopback and http allowed, short backoff.
func fastOptions(o *memOutbox) Options {
	return Options{
		Outbox: o, Guard: NewGuard(GuardOptions{Allow: loopback, AllowHTTP: true}), Signer: testSigner(),
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Poll: 20 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}
}

// run starts a deliverer with opts; the test's cleanup stops it and waits for Run.
func run(t *testing.T, opts Options) *Deliverer {
	t.Helper()
	dl, err := NewDeliverer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := testutil.Receive(t, done, "Run to return"); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return dl
}

// delivery returns a delivery of task to url, created now.
func delivery(id, task string, seq uint64, url string) Delivery {
	return Delivery{ID: id, TaskID: task, ContextID: "ctx-" + task, Seq: seq, ConfigID: "cfg", URL: url,
		ContentType: "application/a2a+json", Body: []byte(`{"event":"` + id + `"}`), Created: time.Now()}
}

// fakeResolver answers names from a table; answers[name] is a list of answers given in
// turn (the last repeats). It counts lookups.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	lookups map[string]int
}

func newResolver(answers map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][][]netip.Addr{}, lookups: map[string]int{}}
	for name, list := range answers {
		for _, a := range list {
			r.answers[name] = append(r.answers[name], []netip.Addr{netip.MustParseAddr(a)})
		}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list, ok := r.answers[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	i := min(r.lookups[host], len(list)-1)
	r.lookups[host]++
	return list[i], nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

// multiResolver answers every name with addrs.
type multiResolver struct{ addrs []netip.Addr }

func (r *multiResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r.addrs, nil
}

func itoa(i int) string { return strconv.Itoa(i) }

// contextWith returns req's context carrying the checked target t.
func contextWith(req *http.Request, t *target) context.Context {
	return context.WithValue(req.Context(), targetKey{}, t)
}
