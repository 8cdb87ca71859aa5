package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    rateSpec
		wantErr string
	}{
		{in: "600/m", want: rateSpec{600, time.Minute}},
		{in: "10/s", want: rateSpec{10, time.Second}},
		{in: "3600/h", want: rateSpec{3600, time.Hour}},
		{in: " 5 / min ", want: rateSpec{5, time.Minute}},
		{in: "0", want: rateSpec{}},
		{in: "off", want: rateSpec{}},
		{in: "", want: rateSpec{}},
		{in: "60", wantErr: "want N/s, N/m or N/h"},
		{in: "-1/s", wantErr: "positive integer"},
		{in: "0/s", wantErr: "positive integer"},
		{in: "1.5/s", wantErr: "want N/s"},
		{in: "ten/m", wantErr: "want N/s"},
		{in: "10/d", wantErr: `unknown period "d"`},
		{in: "10/", wantErr: "unknown period"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseRate(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "--rate-limit") {
					t.Fatalf("parseRate(%q) error = %v, want one naming --rate-limit and containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseRate(%q) = %+v, %v, want %+v, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

// fakeNow is a settable clock.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func TestRateLimiter(t *testing.T) {
	t.Parallel()
	type step struct {
		advance   time.Duration
		peer      string
		wantOK    bool
		wantRetry time.Duration // when refused
	}
	tests := []struct {
		name  string
		spec  rateSpec
		steps []step
	}{
		{
			name: "burst then refill one per period/N",
			spec: rateSpec{3, time.Minute}, // one token every 20s, burst 3
			steps: []step{
				{peer: "a", wantOK: true}, {peer: "a", wantOK: true}, {peer: "a", wantOK: true},
				{peer: "a", wantRetry: 20 * time.Second},
				{advance: 5 * time.Second, peer: "a", wantRetry: 15 * time.Second},
				{advance: 15 * time.Second, peer: "a", wantOK: true},
				{peer: "a", wantRetry: 20 * time.Second},
			},
		},
		{
			name: "peers have separate buckets",
			spec: rateSpec{1, time.Second},
			steps: []step{
				{peer: "a", wantOK: true}, {peer: "a", wantRetry: time.Second},
				{peer: "b", wantOK: true}, {peer: "b", wantRetry: time.Second},
				{peer: "local", wantOK: true},
			},
		},
		{
			name: "an idle peer refills to the burst, not beyond",
			spec: rateSpec{2, time.Second},
			steps: []step{
				{peer: "a", wantOK: true},
				{advance: time.Hour, peer: "a", wantOK: true}, {peer: "a", wantOK: true},
				{peer: "a", wantRetry: 500 * time.Millisecond},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			l := newRateLimiter(tt.spec, clock.now)
			for i, st := range tt.steps {
				clock.add(st.advance)
				ok, retry := l.Allow(st.peer)
				if ok != st.wantOK || (!ok && retry != st.wantRetry) || (ok && retry != 0) {
					t.Fatalf("step %d: Allow(%q) = %v, %v, want %v, %v", i, st.peer, ok, retry, st.wantOK, st.wantRetry)
				}
			}
		})
	}
	if l := newRateLimiter(rateSpec{}, nil); l != nil {
		t.Errorf("newRateLimiter(off) = %v, want nil (admit all)", l)
	}
}

// TestRateLimiterBounded: buckets of peers idle for a full period are dropped, and the
// map never exceeds maxBuckets.
func TestRateLimiterBounded(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := newRateLimiter(rateSpec{10, time.Second}, clock.now)
	for i := range 100 {
		l.Allow(fmt.Sprint("p", i))
	}
	if got := l.tracked(); got != 100 {
		t.Fatalf("tracked = %d, want 100", got)
	}
	clock.add(time.Second) // every bucket has refilled
	l.Allow("fresh")
	if got := l.tracked(); got != 1 {
		t.Fatalf("tracked after a full period = %d, want 1 (idle buckets dropped)", got)
	}
	// Past the bound within one period, the least recently used bucket goes.
	for i := range maxBuckets + 10 {
		clock.add(time.Nanosecond)
		l.Allow(fmt.Sprint("q", i))
	}
	if got := l.tracked(); got > maxBuckets {
		t.Fatalf("tracked = %d, want at most %d", got, maxBuckets)
	}
}

// TestRateLimiterConcurrent: under -race, concurrent peers never get more than their
// burst within an instant.
func TestRateLimiterConcurrent(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := newRateLimiter(rateSpec{50, time.Hour}, clock.now)
	var mu sync.Mutex
	admitted := map[string]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			peer := fmt.Sprint("peer-", w%2)
			for range 100 {
				if ok, _ := l.Allow(peer); ok {
					mu.Lock()
					admitted[peer]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, p := range []string{"peer-0", "peer-1"} {
		if admitted[p] != 50 {
			t.Errorf("%s admitted %d, want exactly the burst 50", p, admitted[p])
		}
	}
}

// TestRateLimitPerPeer: over the wire, a peer past its limit gets -32000 RATE_LIMITED with
// a retry hint and nothing of the refused request is stored; another peer is unaffected.
func TestRateLimitPerPeer(t *testing.T) {
	cfg := peersConfig(t)
	cfg.RateLimit = "3/h" // no refill during the test
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	send := func(token, contextID string) rpcResponse {
		t.Helper()
		return rpc(t, c, s.URL(), token, false, sendBody(false, contextID, "hi", "", ""))
	}
	for i := range 3 {
		if r := send(tokAlice, fmt.Sprint("rl-ok-", i)); r.Error != nil {
			t.Fatalf("alice send %d: error %+v, want success within the limit", i, r.Error)
		}
	}
	appendsBefore := s.ledger.Stats().Appends
	r := send(tokAliceNew, "rl-refused") // the rotated token shares alice's bucket
	if r.Error == nil || r.Error.Code != -32000 {
		t.Fatalf("alice's fourth send: error %+v, want -32000", r.Error)
	}
	var data struct {
		Reason   string            `json:"reason"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(r.Error.Data, &data); err != nil || data.Reason != "RATE_LIMITED" {
		t.Fatalf("error data = %s, want reason RATE_LIMITED", r.Error.Data)
	}
	if secs, err := strconv.Atoi(data.Metadata["retryAfterSeconds"]); err != nil || secs <= 0 || secs > 3600 {
		t.Errorf("retry hint = %q, want retryAfterSeconds in 1..3600", data.Metadata["retryAfterSeconds"])
	}
	if got := owners(t, c, s, "rl-refused"); len(got) != 0 {
		t.Errorf("the refused request created a conversation owned by %v", got)
	}
	if got := s.ledger.Stats().Appends; got != appendsBefore {
		t.Errorf("ledger appends moved from %d to %d on a refused request, want nothing stored", appendsBefore, got)
	}
	// v1.0 carries the same reason in its ErrorInfo.
	rv1 := rpc(t, c, s.URL(), tokAlice, true, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-v1","contextId":"rl-v1","parts":[{"text":"hi"}]}}}`)
	var details []map[string]any
	if rv1.Error == nil || rv1.Error.Code != -32000 || json.Unmarshal(rv1.Error.Data, &details) != nil || len(details) == 0 ||
		details[0]["@type"] != "type.googleapis.com/google.rpc.ErrorInfo" || details[0]["reason"] != "RATE_LIMITED" {
		t.Errorf("v1.0 rate-limited error = %+v, want -32000 with ErrorInfo reason RATE_LIMITED", rv1.Error)
	}
	// Bob has his own bucket.
	if r := send(tokBob, "rl-bob"); r.Error != nil {
		t.Errorf("bob's send: error %+v, want success (alice's limit is hers)", r.Error)
	}
	if got := owners(t, c, s, "rl-bob"); len(got) != 1 || got[0] != "bob" {
		t.Errorf("rl-bob owners = %v, want [bob]", got)
	}
}
