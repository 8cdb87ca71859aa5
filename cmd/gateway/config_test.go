package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/server"
)

// parseServe parses serve's command line the way runServe does, without serving.
func parseServe(t *testing.T, args []string, env map[string]string) (server.Config, error) {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	probe := flag.NewFlagSet("serve", flag.ContinueOnError)
	bindServe(probe, lookup, nil, new(server.Config))
	var file map[string]string
	if path, _ := configPath(args, lookup); path != "" {
		f, err := loadConfigFile(path, probe)
		if err != nil {
			return server.Config{}, err
		}
		file = f
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg server.Config
	ef := bindServe(fs, lookup, file, &cfg)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if err := errors.Join(ef.errs...); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(file, []byte("addr: 127.0.0.1:7001\necho-delay: 7ms\ndata-dir: /from/file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantAddr  string
		wantDelay time.Duration
		wantDir   string
	}{
		{"defaults", nil, nil, "127.0.0.1:9900", 0, "./data"},
		{"file", []string{"--config", file}, nil, "127.0.0.1:7001", 7 * time.Millisecond, "/from/file"},
		{"env over file", []string{"--config", file}, map[string]string{"GATEWAY_ADDR": "127.0.0.1:7002"}, "127.0.0.1:7002", 7 * time.Millisecond, "/from/file"},
		{"flag over env", []string{"--config=" + file, "--addr", "127.0.0.1:7003"}, map[string]string{"GATEWAY_ADDR": "127.0.0.1:7002"}, "127.0.0.1:7003", 7 * time.Millisecond, "/from/file"},
		{"config from env", nil, map[string]string{"GATEWAY_CONFIG": file, "GATEWAY_ECHO_DELAY": "1s"}, "127.0.0.1:7001", time.Second, "/from/file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseServe(t, tt.args, tt.env)
			if err != nil {
				t.Fatalf("parse error = %v", err)
			}
			if cfg.Addr != tt.wantAddr || cfg.EchoDelay != tt.wantDelay || cfg.DataDir != tt.wantDir {
				t.Fatalf("config = addr %q delay %v dir %q, want %q %v %q", cfg.Addr, cfg.EchoDelay, cfg.DataDir, tt.wantAddr, tt.wantDelay, tt.wantDir)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("adr: 127.0.0.1:1\n"), 0o600)
	nested := filepath.Join(dir, "nested.yaml")
	_ = os.WriteFile(nested, []byte("addr: {a: 1}\n"), 0o600)
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown key", []string{"--config", bad}, nil, `unknown key "adr"`},
		{"nested value", []string{"--config", nested}, nil, "must be a single value"},
		{"missing file", []string{"--config", filepath.Join(dir, "none.yaml")}, nil, "no such file"},
		{"bad env duration", nil, map[string]string{"GATEWAY_ECHO_DELAY": "soon"}, "GATEWAY_ECHO_DELAY"},
		{"public addr without tokens", []string{"--addr", "0.0.0.0:9900"}, nil, "not a loopback address"},
		{"bad agent", []string{"--agent", "gpt"}, nil, `--agent "gpt"`},
		{"bad busy policy", []string{"--busy-policy", "queue"}, nil, "--busy-policy"},
		{"bad log format", []string{"--log-format", "xml"}, nil, "--log-format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseServe(t, tt.args, tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := parseServe(t, []string{"--addr", "0.0.0.0:9900", "--insecure-public"}, nil); err != nil {
		t.Fatalf("--insecure-public with a public addr: %v", err)
	}
}

func TestServeHelp(t *testing.T) {
	t.Parallel()
	stdout, _, err := runCLI(t, "serve", "--help")
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("serve --help error = %v", err)
	}
	for _, want := range []string{"--data-dir", "GATEWAY_DATA_DIR", "--echo-delay", "--busy-policy", "--config", "agent-card.json"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	out, _, err := runCLI(t, "help")
	if err != nil || !strings.Contains(out, "gateway serve") || !strings.Contains(out, "gateway conversations") {
		t.Fatalf("gateway help = %q, %v", out, err)
	}
	if _, _, err := runCLI(t, "nope"); !errors.As(err, new(usageError)) {
		t.Fatalf("unknown command error = %v, want a usage error", err)
	}
}
