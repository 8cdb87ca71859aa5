package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/logctx"
	"github.com/a2a-gateway/gateway/server"
)

func TestPushFlags(t *testing.T) {
	t.Parallel()
	cfg, err := parseServe(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Push || cfg.PushRetryFor != 24*time.Hour || cfg.PushAllowHTTP || len(cfg.PushAllow) != 0 {
		t.Errorf("defaults: push %v, retry-for %v, allow-http %v, allow %v", cfg.Push, cfg.PushRetryFor, cfg.PushAllowHTTP, cfg.PushAllow)
	}
	env := map[string]string{"GATEWAY_PUSH_ALLOW": "192.168.0.0/16", "GATEWAY_PUSH_ALLOW_HTTP": "true"}
	if cfg, err = parseServe(t, nil, env); err != nil || !slices.Equal(cfg.PushAllow, []string{"192.168.0.0/16"}) || !cfg.PushAllowHTTP {
		t.Errorf("from the environment: %v, allow %v, allow-http %v", err, cfg.PushAllow, cfg.PushAllowHTTP)
	}
	cfg, err = parseServe(t, []string{"--push-allow", "127.0.0.1", "--push-allow", "hooks.lan, 10.0.0.0/8", "--push-allow=[::1]", "--push-retry-for", "1h"}, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1", "hooks.lan", "10.0.0.0/8", "[::1]"} // server's TestPushGuardOptions reads them
	if err := cfg.Validate(); err != nil || !slices.Equal(cfg.PushAllow, want) || cfg.PushRetryFor != time.Hour {
		t.Errorf("flags over the environment: %v, allow %q retry-for %v; want %q 1h", err, cfg.PushAllow, cfg.PushRetryFor, want)
	}
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(file, []byte("push: false\npush-allow: 10.1.0.0/16,hooks.lan\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = parseServe(t, []string{"--config", file}, nil); err != nil || cfg.Push || len(cfg.PushAllow) != 2 {
		t.Errorf("from the config file: %v, push %v, allow %v", err, cfg.Push, cfg.PushAllow)
	}
	for _, bad := range [][]string{{"--push-allow", "http://hooks.lan/"}, {"--push-allow", "10.0.0.0/33"}, {"--push-allow", "hooks.lan:443"}, {"--push-retry-for", "-1s"}} {
		if _, err := parseServe(t, bad, nil); err == nil || !strings.Contains(err.Error(), "--push-") {
			t.Errorf("%v: error %v, want one naming the flag", bad, err)
		}
	}
}

// TestGuardFlags: the guards' flags have their defaults and GATEWAY_* twins, and bad
// values are start-up errors naming the flag.
func TestGuardFlags(t *testing.T) {
	t.Parallel()
	cfg, err := parseServe(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BodyTimeout != 30*time.Second || cfg.BodyMinRate != server.DefaultBodyMinRate || cfg.AllowedHosts != "" {
		t.Errorf("defaults: body-timeout %v, body-min-rate %d, allowed-hosts %q; want 30s, %d, empty", cfg.BodyTimeout, cfg.BodyMinRate, cfg.AllowedHosts, server.DefaultBodyMinRate)
	}
	cfg, err = parseServe(t, nil, map[string]string{"GATEWAY_BODY_TIMEOUT": "2s", "GATEWAY_BODY_MIN_RATE": "0", "GATEWAY_ALLOWED_HOSTS": "gw.internal"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BodyTimeout != 2*time.Second || cfg.BodyMinRate != 0 || cfg.AllowedHosts != "gw.internal" {
		t.Errorf("from the environment: %v, %d, %q; want 2s, 0, gw.internal", cfg.BodyTimeout, cfg.BodyMinRate, cfg.AllowedHosts)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--allowed-hosts", "https://gw.example/"}, "--allowed-hosts"},
		{[]string{"--public-url", "gw.example"}, "--public-url"},
		{[]string{"--body-timeout", "-1s"}, "--body-timeout"},
		{[]string{"--body-min-rate", "-1"}, "--body-min-rate"},
	} {
		cfg, err := parseServe(t, tc.args, nil)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: error %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}

// TestRootLoggerCarriesRequestScope: the root logger serve builds (either format) adds
// the request scope of the context to every line.
func TestRootLoggerCarriesRequestScope(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			l := newLogger(server.Config{LogFormat: format, LogLevel: slog.LevelInfo}, &buf)
			ctx := logctx.WithAttrs(logctx.WithRequestID(t.Context(), "rid-7"), slog.String(logctx.KeyTaskID, "t-1"))
			l.With("component", "x").InfoContext(ctx, "hello")
			l.InfoContext(t.Context(), "no scope")
			out := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(out) != 2 {
				t.Fatalf("got %d lines, want 2:\n%s", len(out), buf.String())
			}
			for _, want := range []string{"rid-7", "request_id", "task_id", "t-1"} {
				if !strings.Contains(out[0], want) {
					t.Errorf("line %q lacks %q", out[0], want)
				}
			}
			if strings.Contains(out[1], "request_id") {
				t.Errorf("line without a scope has a request_id: %q", out[1])
			}
		})
	}
}
