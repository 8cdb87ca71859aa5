package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleWith writes deploy/gateway.example.yaml with the agent and agent-model keys set,
// the way an operator copies it.
func exampleWith(t *testing.T, agent, model string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "gateway.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "\nagent: echo\n", "\nagent: "+agent+"\n", 1)
	s = strings.Replace(s, "\nagent-model: \"\"\n", "\nagent-model: "+model+"\n", 1)
	if !strings.Contains(s, "\nagent: "+agent+"\n") || !strings.Contains(s, "\nagent-model: "+model+"\n") {
		t.Fatal("the example config has no `agent: echo` and `agent-model: \"\"` lines to edit")
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAgentKeyFollowsAgent (issue #15 item 14): the example config copied with agent:
// anthropic reads ANTHROPIC_API_KEY (it pinned OPENAI_API_KEY, and the gateway then sent
// requests with no key after a WARN); a hosted provider without its key is a start-up
// error naming the variable and --agent-key-env; a custom base URL may run without one.
func TestAgentKeyFollowsAgent(t *testing.T) {
	t.Parallel()
	anthropic := exampleWith(t, "anthropic", "claude-x")
	openai := exampleWith(t, "openai", "gpt-x")
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantKey string
		wantErr []string // substrings of the error; nil: no error
	}{
		{"anthropic example reads ANTHROPIC_API_KEY", []string{"--config", anthropic},
			map[string]string{"ANTHROPIC_API_KEY": "ant-key", "OPENAI_API_KEY": "oai-key"}, "ant-key", nil},
		{"openai example reads OPENAI_API_KEY", []string{"--config", openai},
			map[string]string{"ANTHROPIC_API_KEY": "ant-key", "OPENAI_API_KEY": "oai-key"}, "oai-key", nil},
		{"anthropic without its key", []string{"--config", anthropic},
			map[string]string{"OPENAI_API_KEY": "oai-key"}, "", []string{"ANTHROPIC_API_KEY", "--agent-key-env"}},
		{"openai without its key", []string{"--agent", "openai", "--agent-model", "m"}, nil, "",
			[]string{"OPENAI_API_KEY", "--agent-key-env"}},
		{"openai's public URL named, without a key", []string{"--agent", "openai", "--agent-model", "m", "--agent-url", "https://api.openai.com/v1/"}, nil, "",
			[]string{"OPENAI_API_KEY"}},
		{"a named variable that is unset", []string{"--agent", "anthropic", "--agent-model", "m", "--agent-key-env", "MY_KEY"}, nil, "",
			[]string{"MY_KEY", "--agent-key-env"}},
		{"a named variable", []string{"--agent", "anthropic", "--agent-model", "m", "--agent-key-env", "MY_KEY"},
			map[string]string{"MY_KEY": "mine"}, "mine", nil},
		{"a local OpenAI-compatible server needs no key", []string{"--agent", "openai", "--agent-model", "m", "--agent-url", "http://127.0.0.1:11434/v1"}, nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			cfg, err := serveConfig(tt.args, lookup, io.Discard)
			if tt.wantErr == nil {
				if err != nil || cfg.AgentKey != tt.wantKey {
					t.Fatalf("serveConfig() = key %q, %v; want key %q, nil", cfg.AgentKey, err, tt.wantKey)
				}
				return
			}
			if err == nil {
				t.Fatalf("serveConfig() error = nil (key %q), want one naming %q", cfg.AgentKey, tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("serveConfig() error = %q, want it to name %q", err, w)
				}
			}
			if exitCode(err) != 2 {
				t.Errorf("exit status %d, want 2", exitCode(err))
			}
		})
	}
}
