package server

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	bolterrors "go.etcd.io/bbolt/errors"
	"go.uber.org/goleak"

	"github.com/a2a-gateway/gateway/ledger"
)

// TestOpenServerFailureLeavesNothing provokes each start-up failure OpenServer can meet
// and checks that it returns the cause, that no goroutine it started is left (the turn
// runner's audit goroutine, the Redis client's, the ledger's) and that the ledger file
// was closed (it can be opened again at once). Not parallel: goleak counts goroutines.
func TestOpenServerFailureLeavesNothing(t *testing.T) {
	tests := []struct {
		name string
		// setup adjusts cfg (and ctx) to provoke the failure; it may register cleanups.
		setup   func(t *testing.T, cfg *Config) context.Context
		wantErr func(t *testing.T, cfg Config, err error)
		ledger  bool // a ledger file exists afterwards and must open again
	}{
		{
			name: "data dir is a file",
			setup: func(t *testing.T, cfg *Config) context.Context {
				f := filepath.Join(t.TempDir(), "file")
				if err := os.WriteFile(f, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				cfg.DataDir = f
				return t.Context()
			},
			wantErr: wantIs(syscall.ENOTDIR),
		},
		{
			name: "ledger locked by another store",
			setup: func(t *testing.T, cfg *Config) context.Context {
				led, err := ledger.Open(filepath.Join(cfg.DataDir, "ledger.db"), ledger.Options{}, discardLogger())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = led.Close() })
				return t.Context()
			},
			wantErr: wantIs(bolterrors.ErrTimeout),
		},
		{
			name: "redis refuses the gateway",
			setup: func(t *testing.T, cfg *Config) context.Context {
				cfg.RedisAddr = refusingRedis(t)
				return t.Context()
			},
			wantErr: func(t *testing.T, _ Config, err error) {
				t.Helper()
				if err == nil {
					t.Fatal("OpenServer() error = nil, want the refusal")
				}
			},
			ledger: true,
		},
		{
			name: "listen address in use",
			setup: func(t *testing.T, cfg *Config) context.Context {
				cfg.Addr = busyAddr(t)
				return t.Context()
			},
			wantErr: wantIs(syscall.EADDRINUSE),
			ledger:  true,
		},
		{
			name: "listen address in use, redis unreachable",
			setup: func(t *testing.T, cfg *Config) context.Context {
				cfg.Addr = busyAddr(t)
				cfg.RedisAddr = closedAddr(t) // the lease service fails closed; the start goes on
				return t.Context()
			},
			wantErr: wantIs(syscall.EADDRINUSE),
			ledger:  true,
		},
		{
			name: "recover fails",
			setup: func(t *testing.T, cfg *Config) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel() // the ledger opens (it takes no ctx); Recover's first read refuses
				return ctx
			},
			wantErr: wantIs(context.Canceled),
			ledger:  true,
		},
		{
			name: "agent construction fails",
			setup: func(t *testing.T, cfg *Config) context.Context {
				cfg.Agent, cfg.AgentModel, cfg.AgentURL = "openai", "m", "ftp://not-http.example"
				return t.Context()
			},
			wantErr: func(t *testing.T, cfg Config, err error) {
				t.Helper()
				_, want := newAgent(cfg, discardLogger(), nil)
				if want == nil || err == nil || err.Error() != want.Error() {
					t.Fatalf("OpenServer() error = %v, want the agent's error %v", err, want)
				}
			},
			ledger: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			ctx := tt.setup(t, &cfg)
			before := goleak.IgnoreCurrent()
			s, err := Open(ctx, cfg, discardLogger())
			if err == nil {
				stopServer(t, s)
				t.Fatal("OpenServer() error = nil, want a start-up failure")
			}
			tt.wantErr(t, cfg, err)
			if err := goleak.Find(before); err != nil {
				t.Errorf("goroutines left after the failed start: %v", err)
			}
			if tt.ledger {
				led, err := ledger.Open(filepath.Join(cfg.DataDir, "ledger.db"), ledger.Options{}, discardLogger())
				if err != nil {
					t.Fatalf("ledger.Open() after the failed start: %v (still open?)", err)
				}
				if err := led.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func wantIs(target error) func(t *testing.T, _ Config, err error) {
	return func(t *testing.T, _ Config, err error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Fatalf("OpenServer() error = %v, want one wrapping %v", err, target)
		}
	}
}

// busyAddr returns the address of a loopback listener the test holds open (connections
// to it are never accepted).
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String()
}

// closedAddr returns a loopback address nothing listens on (a listener's, closed).
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// refusingRedis serves the Redis protocol's error reply to every command line, as a
// server that refuses this client would (the locker reports such a refusal at start).
// Its goroutines end when the listener and every client have closed.
func refusingRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // exits when the listener closes (cleanup below)
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // exits when the client closes its connection
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if line := sc.Text(); len(line) > 0 && line[0] == '*' {
						if _, err := c.Write([]byte("-ERR refused by this test\r\n")); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}
