package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/server"
)

// redactionCorpus: credentials in the formats the redactor knows, each with the part
// that must never be stored (the same cases as projection's redaction tests).
var redactionCorpus = []struct{ text, secret string }{
	{"key: sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90_Uv-Wx", "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90"},
	{"export OPENAI_API_KEY=sk-T3BlbkFJ4xQz9aB7cD2eF5gH8iJ1kL0mN3oP6qR", "T3BlbkFJ4xQz9aB7cD2eF5gH8iJ1kL0mN3oP6qR"},
	{"aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
	{"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 works", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"},
	{"GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789", "11ABCDEFG0123456789_abcdefghij"},
	{"curl -H 'Authorization: Bearer abc.def-ghi' https://api", "abc.def-ghi"},
	{"SLACK_BOT_TOKEN=xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"},
	{"here:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98xKEYSECRET\nQUJDREVGR0g=\n-----END RSA PRIVATE KEY-----\nthanks", "MIIEowIBAAKCAQEA7bq98xKEYSECRET"},
	{"DATABASE_URL=postgres://app:s3cr3t-P@ss@db.internal:5432/app", "s3cr3t-P"},
	{"session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
}

// corpusText is every case of the corpus in one message, behind label.
func corpusText(label string) string {
	parts := []string{label}
	for _, c := range redactionCorpus {
		parts = append(parts, c.text)
	}
	return strings.Join(parts, "\n")
}

// holdingEcho is the echo agent, except that a turn whose message is "hold" waits until
// release is closed: it keeps its context busy for as long as the test needs.
type holdingEcho struct{ release chan struct{} }

func (h holdingEcho) UsesContext() bool { return false }

func (h holdingEcho) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	if t.Text == "hold" {
		select {
		case <-h.release:
		case <-ctx.Done():
			return agent.Result{}, ctx.Err()
		}
	}
	return agent.Echo{}.Reply(ctx, t, emit)
}

// rawEchoPeer is an A2A peer (v0.3, no streaming) that answers every message with its
// text, unredacted: what a careless peer sends back.
func rawEchoPeer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message struct {
					MessageID string `json:"messageId"`
					ContextID string `json:"contextId"`
					Parts     []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if req.Method != "message/send" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
			return
		}
		ctxID := req.Params.Message.ContextID
		if ctxID == "" {
			ctxID = "raw-" + req.Params.Message.MessageID
		}
		text := "you said: " + req.Params.Message.Parts[0].Text
		res, _ := json.Marshal(map[string]any{"kind": "message", "role": "agent", "messageId": "reply-" + req.Params.Message.MessageID,
			"contextId": ctxID, "parts": []any{map[string]any{"kind": "text", "text": text}}})
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, res)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestRedactionOnEveryWritePath puts the credential corpus through every path that writes
// the ledger (DESIGN X-3): a peer's message and the agent's reply in a real turn, a
// request rejected as busy (audit entry), `gateway send`'s message and the peer's reply
// recorded through the admin API and in a data dir directly, and POST /admin/v1/outbound.
// No secret may appear in the stored bytes or in the entries read back.
func TestRedactionOnEveryWritePath(t *testing.T) {
	cfg := testConfig(t)
	hold := holdingEcho{release: make(chan struct{})}
	s := startServer(t, cfg, server.WithAgent(hold))
	c := newHTTPClient(t)
	peer := rawEchoPeer(t)
	srv := "http://" + s.Addr()

	// Inbound message and the agent's reply (echo repeats the message).
	if r := sendV03(t, c, s.URL(), "inbound", corpusText("inbound")); r.Error != nil {
		t.Fatalf("inbound send: %+v", r.Error)
	}
	// A request rejected as busy is kept as an audit entry.
	first := postRPC(t, c, s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"hold-1","contextId":"busy","parts":[{"kind":"text","text":"hold"}]}}}`)
	if first.Error != nil {
		t.Fatalf("holding send: %+v", first.Error)
	}
	pollCondition(t, 10*time.Second, "the holding turn to run", func() bool { return s.Runner().Running() == 1 })
	if r := sendV03(t, c, s.URL(), "busy", corpusText("rejected")); r.Error == nil || r.Error.Code != -32004 {
		t.Fatalf("send to the busy context = %+v, want -32004 (busy)", r.Error)
	}
	close(hold.release)
	pollCondition(t, 10*time.Second, "the holding turn to end", func() bool { return s.Runner().Running() == 0 })

	// `gateway send` to a peer that answers secrets: recorded through the admin API...
	if _, stderr, err := runSendCLI(t, "", "--server", srv, "--data-dir", cfg.DataDir, "--dialect", "0.3", peer, corpusText("send online")); err != nil {
		t.Fatalf("send (online) error = %v; stderr:\n%s", err, stderr)
	}
	// ... and in a data dir directly.
	offlineDir := t.TempDir()
	if _, stderr, err := runSendCLI(t, "", "--server", noGatewayURL(t), "--data-dir", offlineDir, "--dialect", "0.3", peer, corpusText("send offline")); err != nil {
		t.Fatalf("send (offline) error = %v; stderr:\n%s", err, stderr)
	}
	// POST /admin/v1/outbound with secrets in every string it stores.
	rec := conversations.OutboundRecord{Peer: "peerx", PeerURL: "http://127.0.0.1:1/?key=" + redactionCorpus[2].secret,
		ContextID: "admin-outbound", RemoteTaskID: redactionCorpus[0].text, State: "completed",
		Text: corpusText("admin text"), Reply: corpusText("admin reply")}
	if _, err := server.NewAdminClient(srv, adminToken(t, s)).RecordOutbound(t.Context(), rec); err != nil {
		t.Fatalf("POST /admin/v1/outbound: %v", err)
	}
	stopServer(t, s)

	for dir, labels := range map[string][]string{
		cfg.DataDir: {"inbound", "echo: inbound", "rejected", "send online", "you said: send online", "admin text", "admin reply"},
		offlineDir:  {"send offline", "you said: send offline"},
	} {
		path := filepath.Join(dir, "ledger.db")
		stored := exportAll(t, path, labels)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range redactionCorpus {
			if bytes.Contains(raw, []byte(c.secret)) {
				t.Errorf("%s: the file holds %q in clear", path, c.secret)
			}
			if bytes.Contains(stored, []byte(c.secret)) {
				t.Errorf("%s: an entry holds %q in clear", path, c.secret)
			}
		}
	}
}

// exportAll opens the ledger at path and returns every entry of every conversation as
// JSON Lines; it fails the test unless an entry holds each label (each write path left
// its entries).
func exportAll(t *testing.T, path string, labels []string) []byte {
	t.Helper()
	led, err := ledger.Open(path, ledger.Options{}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	svc := conversations.New(led, conversations.Config{})
	page, err := svc.List(t.Context(), conversations.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, c := range page.Conversations {
		if err := svc.Export(t.Context(), conversations.Ref{ContextID: c.ContextID, Owner: c.Peer}, &buf); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range labels {
		if !strings.Contains(buf.String(), l) {
			t.Errorf("%s: no entry holds %q: a write path was not exercised", path, l)
		}
	}
	return buf.Bytes()
}
