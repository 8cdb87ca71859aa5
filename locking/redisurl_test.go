package locking

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestParseURL (issue #15 item 15): redis:// and rediss:// URLs give the connection
// fields; bad ones are ErrRedisURL, and no error repeats the password.
func TestParseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url     string
		want    RedisConfig
		wantTLS bool
		wantErr bool
	}{
		{url: "redis://127.0.0.1:6380", want: RedisConfig{Addr: "127.0.0.1:6380"}},
		{url: "redis://host", want: RedisConfig{Addr: "host:6379"}},
		{url: "redis://:s3cret@host:1/2", want: RedisConfig{Addr: "host:1", Password: "s3cret", DB: 2}},
		{url: "redis://gw:s3cret@host:1/15", want: RedisConfig{Addr: "host:1", Username: "gw", Password: "s3cret", DB: 15}},
		{url: "rediss://gw:s3cret@redis.example:6380/1", want: RedisConfig{Addr: "redis.example:6380", Username: "gw", Password: "s3cret", DB: 1}, wantTLS: true},
		{url: "redis://[::1]:7000/0", want: RedisConfig{Addr: "[::1]:7000"}},
		{url: "http://host:6379", wantErr: true},
		{url: "unix:///tmp/redis.sock", wantErr: true},
		{url: "redis://:s3cret@host:1/x", wantErr: true},
		{url: "redis://:s3cret@host:1/1/2", wantErr: true},
		{url: "redis://:s3cret@host:1/1?dial_timeout=1s", wantErr: true},
		{url: "redis://:s3cret@host:port", wantErr: true},
		{url: "redis://:s3cret@", wantErr: true},
		{url: "host:6379", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			got, err := ParseURL(tt.url)
			if tt.wantErr {
				if !errors.Is(err, ErrRedisURL) {
					t.Fatalf("ParseURL() error = %v, want ErrRedisURL", err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("ParseURL() error %q repeats the password", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseURL() error = %v", err)
			}
			if (got.TLS != nil) != tt.wantTLS {
				t.Errorf("ParseURL() TLS = %v, want set: %v", got.TLS, tt.wantTLS)
			}
			if got.TLS != nil && got.TLS.ServerName != "redis.example" {
				t.Errorf("ParseURL() TLS server name = %q, want redis.example", got.TLS.ServerName)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(RedisConfig{}, "TLS")); diff != "" {
				t.Errorf("ParseURL() (-want +got):\n%s", diff)
			}
		})
	}
}
