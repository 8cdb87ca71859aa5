package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/conversations"
)

// Secrets of the redaction gaps (issue #15 item 9), each in two fragments that must never
// be stored or echoed (a fragment alone is enough to show a leak, also of a secret split
// in two).
var (
	gapMessageID  = [2]string{"ghp_M5g1dS3cr3t", "T0k3nAbCdEfGhIjKl"}
	gapContextID  = [2]string{"sk-proj-C0nt3xtS3cr3t", "Ctx2ndHalfAbCdEfGh"}
	gapFilename   = [2]string{"ghp_F1l3n4m3S3cr3t", "File2ndHalfAbCdEfG"}
	gapSplit      = [2]string{"sk-proj-Spl1tAcr0ssP4rts", "S3c0ndH4lfZq9Xw8Vu7"}
	gapSplitShort = [2]string{"sk-proj-Sh0rtH4lf", "Spl1tS3cr3tAbCdEfGhIj"} // neither half a key alone
	gapZeroWidth  = [2]string{"ghp_Z3r0W1dthF1rst", "S3c0ndZwAbCdEfGhIj"}
	gapReply      = [2]string{"sk-proj-R3plyZ3r0W1dth", "S3cr3tAbCdEfGhIjKlMn"}
	gapOutMsgID   = [2]string{"ghp_0utb0undM3ss4g3", "IdAbCdEfGhIjKlMnOp"}
	gapOutReplyID = [2]string{"ghp_0utb0undR3plyId", "Rid2ndHalfAbCdEfGh"}
	gapOutContext = [2]string{"sk-proj-0utb0undC0nt3xt", "Octx2ndHalfAbCdEfG"}
)

// whole is the secret s in one piece.
func whole(s [2]string) string { return s[0] + s[1] }

// fragments is what of s must never appear: its halves without their well-known
// prefixes (sk-proj-, ghp_), which a placeholder-free text may hold.
func fragments(s [2]string) []string {
	first := strings.TrimPrefix(strings.TrimPrefix(s[0], "sk-proj-"), "ghp_")
	return []string{first, s[1]}
}

// zeroWidthReplier is the echo agent, except that a turn whose message is "reply secret"
// streams a secret with a zero-width space inside, split over three emits.
type zeroWidthReplier struct{}

func (zeroWidthReplier) UsesContext() bool { return false }

func (zeroWidthReplier) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	if t.Text != "reply secret" {
		return agent.Echo{}.Reply(ctx, t, emit)
	}
	for _, c := range []string{"here: " + gapReply[0][:10], gapReply[0][10:] + "\u200b", gapReply[1] + " done"} {
		if err := emit(c); err != nil {
			return agent.Result{}, err
		}
	}
	return agent.Result{}, nil
}

// postRaw posts a JSON-RPC body and returns the raw answer.
func postRaw(t *testing.T, c *http.Client, url, body string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// v03Send is a message/send of one message with the given id, contextId and parts (JSON).
func v03Send(messageID, contextID, parts string) string {
	m := map[string]any{"kind": "message", "role": "user", "messageId": messageID, "contextId": contextID, "parts": json.RawMessage(parts)}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{"message": m}})
	return string(b)
}

// TestRedactionGaps (issue #15 item 9): the free-text fields a peer controls and the
// credentials that used to pass (an id, a file name, a secret split across parts or with
// a zero-width character inside, in a message, a reply, and an outbound record) are
// neither stored nor echoed: an id that holds a credential is refused with -32602 naming
// the field (nothing stored), the rest is redacted. Checked on the answers and on the
// bytes of the ledger file after Close.
func TestRedactionGaps(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg, WithAgent(zeroWidthReplier{}))
	c := newHTTPClient(t)
	echoed := map[string][]byte{}
	secrets := map[string][2]string{}
	textPart := func(s string) string {
		b, _ := json.Marshal(map[string]any{"kind": "text", "text": s})
		return string(b)
	}

	// An id that holds a credential is refused, naming the field; nothing is stored.
	for _, tt := range []struct {
		name, field, msgID, ctxID string
		secret                    [2]string
	}{
		{"messageId", "message.messageId", whole(gapMessageID), "gap-msgid", gapMessageID},
		{"contextId", "message.contextId", "gap-ctx-m1", whole(gapContextID), gapContextID},
	} {
		b := postRaw(t, c, s.URL(), v03Send(tt.msgID, tt.ctxID, "["+textPart("hello "+tt.name)+"]"))
		echoed[tt.name], secrets[tt.name] = b, tt.secret
		var r rpcResponse
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: answer %s: %v", tt.name, b, err)
		}
		if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, tt.field) || !strings.Contains(r.Error.Message, "looks like a credential") {
			t.Errorf("%s holding a secret: answer %s, want -32602 naming %s and \"looks like a credential\"", tt.name, b, tt.field)
		}
	}

	// Free text is redacted: a file name, a secret split across two text parts, one with
	// a zero-width space inside.
	for _, tt := range []struct {
		name, parts string
		secret      [2]string
	}{
		{"filename", "[" + textPart("see the file") + `,{"kind":"file","file":{"name":"report-` + whole(gapFilename) + `.pdf","uri":"https://files.example/r.pdf"}}]`, gapFilename},
		{"split", "[" + textPart("my key is "+gapSplit[0]) + "," + textPart(gapSplit[1]+" thanks") + "]", gapSplit},
		{"split-short", "[" + textPart("key: "+gapSplitShort[0]) + "," + textPart(gapSplitShort[1]) + "]", gapSplitShort},
		{"zero-width", "[" + textPart("token "+gapZeroWidth[0]+"\u200b"+gapZeroWidth[1]+" ok") + "]", gapZeroWidth},
	} {
		b := postRaw(t, c, s.URL(), v03Send("gap-"+tt.name, "gap-"+tt.name, tt.parts))
		echoed[tt.name], secrets[tt.name] = b, tt.secret
		if !bytes.Contains(b, []byte("[redacted:")) || bytes.Contains(b, []byte(`"error"`)) {
			t.Errorf("%s: answer %s, want the task with the secret redacted", tt.name, b)
		}
	}

	// The agent's reply, streamed with a zero-width space inside the secret.
	b := postRaw(t, c, s.URL(), v03Send("gap-reply", "gap-reply", "["+textPart("reply secret")+"]"))
	echoed["reply"], secrets["reply"] = b, gapReply
	if !bytes.Contains(b, []byte("here: [redacted:openai-key] done")) {
		t.Errorf("reply: answer %s, want the reply with the secret redacted", b)
	}

	// An outbound record: its message ids are redacted, a contextId that holds a
	// credential is refused (400 naming contextId) and nothing is stored.
	ac := NewAdminClient("http://"+s.Addr(), s.localToken)
	rec := conversations.OutboundRecord{Peer: "gaps", PeerURL: "http://127.0.0.1:1/", ContextID: "gap-outbound", State: "completed",
		MessageID: whole(gapOutMsgID), Text: "outbound text", ReplyMessageID: whole(gapOutReplyID), Reply: "outbound reply"}
	if _, err := ac.RecordOutbound(t.Context(), rec); err != nil {
		t.Errorf("outbound record with secret message ids: %v, want it recorded, redacted", err)
	}
	rec.ContextID, rec.MessageID, rec.ReplyMessageID = whole(gapOutContext), "out-m2", "out-r2"
	_, err := ac.RecordOutbound(t.Context(), rec)
	var fe *conversations.FieldError
	if !errors.As(err, &fe) || fe.Field != "contextId" || !strings.Contains(fe.Reason, "looks like a credential") {
		t.Errorf("outbound record with a secret contextId: error %v, want a contextId field error saying it looks like a credential", err)
	}
	secrets["outbound messageId"], secrets["outbound replyMessageId"], secrets["outbound contextId"] = gapOutMsgID, gapOutReplyID, gapOutContext

	for name, b := range echoed {
		for _, f := range fragments(secrets[name]) {
			if bytes.Contains(b, []byte(f)) {
				t.Errorf("%s: the answer echoes %q: %s", name, f, b)
			}
		}
	}
	for _, k := range ledgerKeys(t, s) {
		if strings.HasSuffix(k, "/gap-msgid") || strings.HasSuffix(k, "/gap-ctx-m1") || strings.Contains(k, gapContextID[1]) || strings.Contains(k, gapOutContext[1]) {
			t.Errorf("a refused request left conversation %q", k)
		}
	}
	stopServer(t, s)

	path := filepath.Join(cfg.DataDir, "ledger.db")
	stored := exportAll(t, path, []string{"see the file", "my key is", "token ", "here: ", "outbound text"})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, sec := range secrets {
		for _, f := range fragments(sec) {
			if bytes.Contains(raw, []byte(f)) {
				t.Errorf("%s: the ledger file holds %q in clear", name, f)
			}
			if bytes.Contains(stored, []byte(f)) {
				t.Errorf("%s: an entry holds %q in clear", name, f)
			}
		}
	}
}
