package locking

import (
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRedisConfig_withDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      RedisConfig
		want    RedisConfig
		wantErr bool
	}{
		{
			name: "zero fields take defaults",
			in:   RedisConfig{Addr: "127.0.0.1:7000"},
			want: RedisConfig{Addr: "127.0.0.1:7000", KeyPrefix: DefaultKeyPrefix, TTL: DefaultTTL, OpTimeout: DefaultOpTimeout, CheckInterval: DefaultCheckInterval},
		},
		{
			name: "set fields are kept",
			in:   RedisConfig{Addr: "r:1", Password: "pw", DB: 2, KeyPrefix: "p:", TTL: time.Second, OpTimeout: time.Millisecond},
			want: RedisConfig{Addr: "r:1", Password: "pw", DB: 2, KeyPrefix: "p:", TTL: time.Second, OpTimeout: time.Millisecond, CheckInterval: time.Second / 3},
		},
		{
			name: "check interval kept",
			in:   RedisConfig{Addr: "r:1", TTL: 3 * time.Second, CheckInterval: time.Second},
			want: RedisConfig{Addr: "r:1", KeyPrefix: DefaultKeyPrefix, TTL: 3 * time.Second, OpTimeout: DefaultOpTimeout, CheckInterval: time.Second},
		},
		{name: "check interval above ttl/3", in: RedisConfig{Addr: "r:1", TTL: 3 * time.Second, CheckInterval: 1001 * time.Millisecond}, wantErr: true},
		{name: "negative check interval", in: RedisConfig{Addr: "r:1", CheckInterval: -1}, wantErr: true},
		{name: "no addr", in: RedisConfig{}, wantErr: true},
		{name: "ttl too short", in: RedisConfig{Addr: "r:1", TTL: time.Millisecond}, wantErr: true},
		{name: "negative ttl", in: RedisConfig{Addr: "r:1", TTL: -time.Second}, wantErr: true},
		{name: "negative op timeout", in: RedisConfig{Addr: "r:1", OpTimeout: -1}, wantErr: true},
		{name: "negative db", in: RedisConfig{Addr: "r:1", DB: -1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.in.withDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("withDefaults(%+v) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("withDefaults(%+v) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestNewRedis_InvalidConfig(t *testing.T) {
	t.Parallel()
	if r, err := NewRedis(t.Context(), RedisConfig{TTL: -1}, nil); err == nil {
		_ = r.Close()
		t.Fatal("NewRedis(no addr, negative ttl) error = nil, want an error")
	}
}

func TestHolderOf(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]string{
		"task-1\x00c0ffee": "task-1",
		"a\x00b\x00tok":    "a\x00b",
		"\x00tok":          "",
		"foreign":          "foreign", // a value some other writer set
	} {
		if got := holderOf(value); got != want {
			t.Errorf("holderOf(%q) = %q, want %q", value, got, want)
		}
	}
}

// deadAddr returns a 127.0.0.1 address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// A gateway starts while Redis is down and fails closed instead of refusing to start.
func TestNewRedis_Unreachable(t *testing.T) {
	t.Parallel()
	const opTimeout = 500 * time.Millisecond
	r, err := NewRedis(t.Context(), RedisConfig{Addr: deadAddr(t), OpTimeout: opTimeout}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("NewRedis(unreachable) error = %v, want nil (fail closed at run time)", err)
	}
	if err := r.Ping(t.Context()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ping() error = %v, want %v", err, ErrUnavailable)
	}
	start := time.Now()
	if lease, err := r.Acquire(t.Context(), "k", "h"); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrHeld) || lease != nil {
		t.Fatalf("Acquire() = %v, %v, want nil, %v", lease, err, ErrUnavailable)
	}
	if d := time.Since(start); d > opTimeout {
		t.Errorf("Acquire() took %v to fail on a refused connection, want < %v", d, opTimeout)
	}
	if _, err := r.Holder(t.Context(), "k"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Holder() error = %v, want %v", err, ErrUnavailable)
	}
	if err := r.Wait(t.Context(), "k"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Wait() error = %v, want %v", err, ErrUnavailable)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if _, err := r.Acquire(t.Context(), "k", "h"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire() after Close error = %v, want %v", err, ErrClosed)
	}
}
