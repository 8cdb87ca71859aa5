//go:build integration

package locking

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/a2a-gateway/gateway/internal/redistest"
)

// TestRedisURL_AuthAndDB (issue #15 item 15): against a redis-server with requirepass, a
// URL with a wrong password fails NewRedis with a clear error (never repeating the
// password); the right one works, and the lease key lands in the URL's database under
// the configured prefix.
func TestRedisURL_AuthAndDB(t *testing.T) {
	srv := redistest.StartServerWith(t, redistest.Options{Password: "pw-right", Args: []string{"--databases", "4"}})
	log := slog.New(slog.DiscardHandler)

	bad, err := ParseURL("redis://:pw-wrong-1@" + srv.Addr() + "/2")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := NewRedis(t.Context(), bad, log); err == nil {
		_ = r.Close()
		t.Fatal("NewRedis(wrong password) error = nil, want a start-up error")
	} else if !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "pw-wrong-1") {
		t.Errorf("NewRedis(wrong password) error = %q, want one saying Redis refused us, without the password", err)
	}
	noPass, _ := ParseURL("redis://" + srv.Addr() + "/2")
	if r, err := NewRedis(t.Context(), noPass, log); err == nil {
		_ = r.Close()
		t.Error("NewRedis(no password) error = nil, want a start-up error (NOAUTH)")
	}

	cfg, err := ParseURL("redis://:pw-right@" + srv.Addr() + "/2")
	if err != nil {
		t.Fatal(err)
	}
	cfg.KeyPrefix = redistest.Prefix(t)
	r, err := NewRedis(t.Context(), cfg, log)
	if err != nil {
		t.Fatalf("NewRedis(right password) error = %v", err)
	}
	defer r.Close()
	l, err := r.Acquire(t.Context(), "ctx-1", "holder")
	if err != nil {
		t.Fatalf("Acquire() error = %v", err)
	}
	defer l.Release(context.Background())
	for db, want := range map[int]int64{2: 1, 0: 0} {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "pw-right", DB: db, Protocol: 2, DisableIdentity: true})
		n, err := c.Exists(t.Context(), cfg.KeyPrefix+"ctx-1").Result()
		_ = c.Close()
		if err != nil || n != want {
			t.Errorf("EXISTS %sctx-1 in db %d = %d, %v; want %d", cfg.KeyPrefix, db, n, err, want)
		}
	}
}
