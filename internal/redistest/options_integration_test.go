//go:build integration

package redistest

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestStartServerWith_Password: requirepass is set (a PING without AUTH is refused, with
// it answered) and extra arguments reach redis-server (--databases 4: SELECT 3 works,
// SELECT 4 does not).
func TestStartServerWith_Password(t *testing.T) {
	s := StartServerWith(t, Options{Password: "pw-1", Args: []string{"--databases", "4"}})
	if err := ping(s.Addr(), "", time.Second); err == nil {
		t.Error("PING without AUTH answered, want NOAUTH")
	}
	if err := ping(s.Addr(), "wrong", time.Second); err == nil {
		t.Error("AUTH with a wrong password answered OK")
	}
	if err := ping(s.Addr(), "pw-1", time.Second); err != nil {
		t.Errorf("PING after AUTH: %v", err)
	}
	conn, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	if err := command(conn, r, "+OK", "AUTH", "pw-1"); err != nil {
		t.Fatal(err)
	}
	if err := command(conn, r, "+OK", "SELECT", "3"); err != nil {
		t.Errorf("SELECT 3 with --databases 4: %v", err)
	}
	if err := command(conn, r, "+OK", "SELECT", "4"); err == nil {
		t.Error("SELECT 4 with --databases 4 answered OK: the extra arguments did not reach redis-server")
	}
}
