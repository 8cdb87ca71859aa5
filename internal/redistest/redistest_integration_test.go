//go:build integration

package redistest

import (
	"os"
	"testing"
	"time"
)

func TestServer_Lifecycle(t *testing.T) {
	if os.Getenv(EnvAddr) != "" {
		t.Skip(EnvAddr + " is set: this test starts its own servers")
	}
	t.Parallel()
	s := StartServer(t)
	if err := ping(s.Addr(), "", time.Second); err != nil {
		t.Fatalf("PING %s after StartServer: %v", s.Addr(), err)
	}
	if s.Addr() == "127.0.0.1:6379" {
		t.Fatal("StartServer() used the shared :6379")
	}

	s.Pause()
	if err := ping(s.Addr(), "", 100*time.Millisecond); err == nil {
		t.Fatal("PING answered while paused")
	}
	s.Resume()
	if err := ping(s.Addr(), "", time.Second); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}

	s.Stop()
	if err := ping(s.Addr(), "", 100*time.Millisecond); err == nil {
		t.Fatal("PING answered after Stop")
	}
	s.Stop() // stopping twice is fine
	s.Restart()
	if err := ping(s.Addr(), "", time.Second); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	s.Restart() // restarting a running server stops it first
	if err := ping(s.Addr(), "", time.Second); err != nil {
		t.Fatalf("PING after a second Restart: %v", err)
	}
	s.Pause() // Cleanup must stop a paused server too
}

func TestStart_DistinctServers(t *testing.T) {
	if os.Getenv(EnvAddr) != "" {
		t.Skip(EnvAddr + " is set: this test starts its own servers")
	}
	t.Parallel()
	a, b := Start(t), Start(t)
	if a == b {
		t.Fatalf("Start() twice = %q and %q, want two servers", a, b)
	}
}
