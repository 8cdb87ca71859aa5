package redistest

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stopTB is a testing.TB whose Fatal and Skip record the message and end the goroutine
// (run the code under test with run).
type stopTB struct {
	testing.TB
	msg     string
	skipped bool
}

func (s *stopTB) Helper()           {}
func (s *stopTB) Fatal(args ...any) { s.msg = fmt.Sprint(args...); runtime.Goexit() }
func (s *stopTB) Fatalf(format string, args ...any) {
	s.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (s *stopTB) Skipf(format string, args ...any) {
	s.msg, s.skipped = fmt.Sprintf(format, args...), true
	runtime.Goexit()
}

// run calls f on its own goroutine and reports whether it returned normally.
func run(f func()) (returned bool) {
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- ok }()
		f()
		ok = true
	}()
	return <-done
}

func TestPrefix_Unique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		p := Prefix(t)
		if !strings.HasPrefix(p, "gwtest:TestPrefix_Unique:") || !strings.HasSuffix(p, ":") {
			t.Fatalf("Prefix() = %q, want gwtest:TestPrefix_Unique:<random>:", p)
		}
		if seen[p] {
			t.Fatalf("Prefix() returned %q twice", p)
		}
		seen[p] = true
	}
}

// TestStartServer_NotInstalled: without redis-server (and no GATEWAY_TEST_REDIS_ADDR)
// the test is skipped, saying how to install it, as pgtest and the browser tests do
// (issue #35 item 10); with GATEWAY_TEST_REQUIRE naming redis (or all) it fails so.
func TestStartServer_NotInstalled(t *testing.T) {
	t.Setenv(EnvAddr, "")
	t.Setenv("PATH", t.TempDir())
	for _, tt := range []struct {
		require  string
		wantSkip bool
	}{{"", true}, {"postgres,chromium", true}, {"redis", false}, {"all", false}} {
		t.Run("require="+tt.require, func(t *testing.T) {
			t.Setenv(testutil.EnvRequire, tt.require)
			tb := &stopTB{TB: t}
			if run(func() { StartServer(tb) }) {
				t.Fatal("StartServer() returned without redis-server on PATH, want it to end the test")
			}
			want := "redis-server not found: install it (Debian: apt-get install redis-server; make test does it when run as root) or set GATEWAY_TEST_REDIS_ADDR"
			if tb.skipped != tt.wantSkip || !strings.HasPrefix(tb.msg, want) || !strings.Contains(tb.msg, testutil.EnvRequire) {
				t.Fatalf("StartServer() ended the test with %q (skipped %v), want %q and %s, skipped %v", tb.msg, tb.skipped, want, testutil.EnvRequire, tt.wantSkip)
			}
		})
	}
}

// fakeRedis answers +PONG to every line until closed.
func fakeRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() { // exits when the listener is closed
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { // exits when the client hangs up
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "PING") {
						if _, err := c.Write([]byte("+PONG\r\n")); err != nil {
							return
						}
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

func TestStartServer_External(t *testing.T) {
	addr := fakeRedis(t)
	t.Setenv(EnvAddr, addr)
	if got := Start(t); got != addr {
		t.Fatalf("Start() = %q, want %q (from %s)", got, addr, EnvAddr)
	}
	s := StartServer(t)
	tb := &stopTB{TB: t}
	s.tb = tb
	if run(s.Stop) || !tb.skipped {
		t.Fatalf("Stop() on an external server: skipped = %v (%q), want a skip", tb.skipped, tb.msg)
	}
}
