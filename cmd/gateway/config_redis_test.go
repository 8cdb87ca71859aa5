package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/server"
)

// TestRedisURLConfig (issue #15 item 15): --redis-url and GATEWAY_REDIS_URL give the
// lease's password, database, TLS and key prefix; --redis-addr stays the short form and
// excludes the URL; no error or log line repeats the password.
func TestRedisURLConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    locking.RedisConfig
		wantTLS bool
		wantErr string
	}{
		{name: "url flag", args: []string{"--redis-url", "redis://gw:pw-123@10.0.0.5:6380/2", "--redis-key-prefix", "a:"},
			want: locking.RedisConfig{Addr: "10.0.0.5:6380", Username: "gw", Password: "pw-123", DB: 2, KeyPrefix: "a:", TTL: defaultLeaseTTL}},
		{name: "env twin, TLS", env: map[string]string{"GATEWAY_REDIS_URL": "rediss://:pw-123@redis.example/1"},
			want: locking.RedisConfig{Addr: "redis.example:6379", Password: "pw-123", DB: 1, KeyPrefix: locking.DefaultKeyPrefix, TTL: defaultLeaseTTL}, wantTLS: true},
		{name: "addr, the short form", args: []string{"--redis-addr", "127.0.0.1:6379"},
			want: locking.RedisConfig{Addr: "127.0.0.1:6379", KeyPrefix: locking.DefaultKeyPrefix, TTL: defaultLeaseTTL}},
		{name: "both", args: []string{"--redis-addr", "127.0.0.1:6379", "--redis-url", "redis://:pw-123@h/1"}, wantErr: "exclude each other"},
		{name: "bad db", args: []string{"--redis-url", "redis://:pw-123@h/x"}, wantErr: "--redis-url redis://:xxxxx@h/x"},
		{name: "bad scheme", args: []string{"--redis-url", "http://:pw-123@h/1"}, wantErr: "want redis:// or rediss://"},
		{name: "not a URL", args: []string{"--redis-url", "redis://:pw-123@h:port/1"}, wantErr: "--redis-url (not a URL)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := serveConfig(tt.args, func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "pw-123") {
					t.Fatalf("serveConfig() error = %v; want one containing %q, without the password", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, ok := cfg.RedisConfig()
			if !ok || (got.TLS != nil) != tt.wantTLS {
				t.Fatalf("RedisConfig() = %+v, %v; want a Redis lease, TLS %v", got, ok, tt.wantTLS)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(locking.RedisConfig{}, "TLS")); diff != "" {
				t.Errorf("RedisConfig() (-want +got):\n%s", diff)
			}
			var logs bytes.Buffer
			slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "config", cfg)
			if strings.Contains(logs.String(), "pw-123") {
				t.Errorf("the logged config holds the password: %s", logs.String())
			}
		})
	}
	if _, ok := (&server.Config{}).RedisConfig(); ok {
		t.Error("no Redis flags: RedisConfig() ok = true, want the in-process lease")
	}
}

// defaultLeaseTTL is --lease-ttl's default.
const defaultLeaseTTL = 30 * time.Second
