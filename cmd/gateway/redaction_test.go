package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/server"
)

// secretCase is one line of redact/testdata/secrets/secrets.txt.
type secretCase struct{ kind, text, secret string }

func loadSecretCorpus(t *testing.T) []secretCase {
	t.Helper()
	f, err := os.Open("../../redact/testdata/secrets/secrets.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unescape := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`)
	var out []secretCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "\t")
		if len(parts) != 3 {
			t.Fatalf("corpus line %q: want 3 tab-separated fields", line)
		}
		out = append(out, secretCase{parts[0], unescape.Replace(parts[1]), unescape.Replace(parts[2])})
	}
	if len(out) < 20 {
		t.Fatalf("corpus has %d cases; want the full corpus", len(out))
	}
	return out
}

// piecesAgent replies with a fixed text (the test's secret case), emitted in 7-byte pieces
// so that credentials are split across chunks.
type piecesAgent struct{ reply func(agent.Turn) string }

func (a piecesAgent) Reply(_ context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	s := a.reply(t)
	for len(s) > 0 {
		n := min(7, len(s))
		if err := emit(s[:n]); err != nil {
			return agent.Result{}, err
		}
		s = s[n:]
	}
	return agent.Result{}, nil
}

// TestRedactionCorpus: a credential pasted by a peer or produced by the agent is
// never stored in clear, streamed, or shown by the operator tools.
func TestRedactionCorpus(t *testing.T) {
	t.Parallel()
	corpus := loadSecretCorpus(t)
	byCtx := map[string]secretCase{}
	for i, c := range corpus {
		byCtx[fmt.Sprintf("secret-%d", i)] = c
	}
	// The agent answers every turn with the case's text: a model "producing" the secret.
	s := startServer(t, testConfig(t), server.WithAgent(piecesAgent{reply: func(tu agent.Turn) string {
		return "here you go: " + byCtx[tu.ContextID].text + " (done)"
	}}))
	c := &http.Client{}
	for i, tc := range corpus {
		ctxID := fmt.Sprintf("secret-%d", i)
		t.Run(fmt.Sprintf("%d_%s", i, tc.kind), func(t *testing.T) {
			// The peer pastes the secret (text, a data part, the message metadata); the
			// reply streams over SSE.
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": map[string]any{
				"message": map[string]any{"kind": "message", "role": "user", "messageId": "m-" + ctxID, "contextId": ctxID,
					"parts": []any{
						map[string]any{"kind": "text", "text": "my config: " + tc.text},
						map[string]any{"kind": "data", "data": map[string]any{"config": tc.text}},
					},
					"metadata": map[string]any{"note": tc.text}}}})
			resp, err := c.Post(s.URL(), "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			streamed, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			placeholder := "[redacted:" + tc.kind + "]"
			if !bytes.Contains(streamed, []byte("TASK_STATE_COMPLETED")) && !bytes.Contains(streamed, []byte(`"completed"`)) {
				t.Fatalf("the stream did not complete: %.300s", streamed)
			}
			check := func(where string, b []byte) {
				t.Helper()
				for _, enc := range []string{tc.secret, jsonInner(tc.secret)} {
					if bytes.Contains(b, []byte(enc)) {
						t.Errorf("%s holds the %s secret in clear", where, tc.kind)
					}
				}
				if !bytes.Contains(b, []byte(placeholder)) && !bytes.Contains(b, []byte(jsonInner(placeholder))) {
					t.Errorf("%s has no %s placeholder", where, placeholder)
				}
			}
			check("the SSE stream", streamed)
			show, _, err := runCLI(t, "conversations", "show", ctxID, "--all", "--server", s.URL())
			if err != nil {
				t.Fatalf("conversations show: %v", err)
			}
			check("conversations show --all", []byte(show))
			export, _, err := runCLI(t, "conversations", "export", ctxID, "--server", s.URL())
			if err != nil {
				t.Fatalf("conversations export: %v", err)
			}
			check("conversations export", []byte(export))
			entries, err := s.Ledger().Range(t.Context(), "local", ctxID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Ledger().Inflate(t.Context(), entries); err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(entries)
			check("the ledger", raw)
		})
	}
}

// jsonInner is s as it appears inside a JSON string.
func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
