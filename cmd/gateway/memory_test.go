package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestMemoryCLI: a gateway with --history-memory and an exec agent (which is given the
// history) keeps a memory once its small history budget drops turns (issue #38):
// `conversations show` prints the snapshot's facts with their evidence and each turn's
// prefix reuse, `replay` shows the memory section the agent saw, and `conversations
// memory rebuild` finds every stored snapshot equal to its rebuild, through the admin API
// and offline from the data dir.
func TestMemoryCLI(t *testing.T) {
	cfg := testConfig(t)
	cfg.Agent, cfg.AgentCommand = "exec", "cat >/dev/null; echo noted"
	cfg.HistoryLimit, cfg.HistoryTokens, cfg.HistoryMemory, cfg.MemoryTokens = 200, 600, true, 200
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	for i := range 40 {
		sendV03(t, c, s.URL(), "mem", fmt.Sprintf("Step %d: deploy service s%d to region r%d.", i, i%5, i%3))
	}
	srv := "http://" + s.Addr()
	out, _, err := runCLI(t, "conversations", "show", "mem", "--server", srv)
	if err != nil || !strings.Contains(out, "memory (seq ") || !strings.Contains(out, "[evidence #") || !strings.Contains(out, "prefix reuse ") {
		t.Fatalf("show = %q, %v; want the memory with evidence and the prefix reuse", out, err)
	}
	out, _, err = runCLI(t, "conversations", "replay", "mem", "--server", srv)
	if err != nil || !strings.Contains(out, "[Memory of the earlier conversation") {
		t.Fatalf("replay = %q, %v; want the memory section", out, err)
	}
	out, _, err = runCLI(t, "conversations", "memory", "rebuild", "mem", "--server", srv)
	if err != nil || !strings.Contains(out, "rebuilt: equal") || strings.Contains(out, "differs") {
		t.Fatalf("memory rebuild (online) = %q, %v; want every snapshot equal", out, err)
	}
	stopServer(t, s)
	out, _, err = runCLI(t, "conversations", "memory", "rebuild", "mem", "--server", "http://127.0.0.1:1", "--data-dir", cfg.DataDir,
		"--history-tokens", "600", "--memory-tokens", "200")
	if err != nil || !strings.Contains(out, "rebuilt: equal") || strings.Contains(out, "differs") {
		t.Fatalf("memory rebuild (offline) = %q, %v; want every snapshot equal", out, err)
	}
	if _, _, err := runCLI(t, "conversations", "memory", "forget", "mem"); err == nil {
		t.Error("conversations memory forget: no usage error")
	}
}
