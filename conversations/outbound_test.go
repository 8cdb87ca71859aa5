package conversations

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
)

func goodRecord() OutboundRecord {
	return OutboundRecord{Peer: "macmini", PeerURL: "http://127.0.0.1:9/", ContextID: "c1", RemoteTaskID: "rt",
		State: "completed", MessageID: "m1", Text: "hello", ReplyMessageID: "r1", Reply: "echo: hello"}
}

func TestRecordOutbound_Invalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*OutboundRecord)
		fields []string
	}{
		{"no peer", func(r *OutboundRecord) { r.Peer = "" }, []string{"peer"}},
		{"bad peer name", func(r *OutboundRecord) { r.Peer = "a b" }, []string{"peer"}},
		{"local is no peer", func(r *OutboundRecord) { r.Peer = "local" }, []string{"peer"}},
		{"url with user", func(r *OutboundRecord) { r.Peer = "http://u:p@h/" }, []string{"peer"}},
		{"url with a key", func(r *OutboundRecord) { r.Peer = "http://h/?k=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90" }, []string{"peer"}},
		{"bad peer url", func(r *OutboundRecord) { r.PeerURL = "ftp://x" }, []string{"peerUrl"}},
		{"bad context", func(r *OutboundRecord) { r.ContextID = strings.Repeat("x", 257) }, []string{"contextId"}},
		{"failed state", func(r *OutboundRecord) { r.State = "failed" }, []string{"state"}},
		{"no text", func(r *OutboundRecord) { r.Text = " " }, []string{"text"}},
		{"several", func(r *OutboundRecord) { r.Peer, r.Text = "", "" }, []string{"peer", "text"}},
		{"ledger's own check", func(r *OutboundRecord) { r.MessageID = strings.Repeat("m", 257) }, []string{"entries[0].messageId"}},
		{"via with a URL peer", func(r *OutboundRecord) { r.Peer, r.Via = "http://h/", "bob" }, []string{"via"}},
		{"bad via", func(r *OutboundRecord) { r.Via = "b@b" }, []string{"via"}},
		{"origin without owner", func(r *OutboundRecord) { r.Origin = &Origin{ContextID: "c0"} }, []string{"origin"}},
		{"origin with a bad contextId", func(r *OutboundRecord) { r.Origin = &Origin{Owner: "bob", ContextID: "a\x00"} }, []string{"origin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			led, _ := openLedger(t)
			svc := New(led, Config{})
			rec := goodRecord()
			tt.edit(&rec)
			_, err := svc.RecordOutbound(t.Context(), rec)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("RecordOutbound() error = %v, want ErrInvalid", err)
			}
			var got []string
			for _, fe := range FieldErrors(err) {
				got = append(got, fe.Field)
			}
			if diff := cmp.Diff(tt.fields, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s\nerror: %v", diff, err)
			}
			if list, err := led.List(t.Context(), ledger.ListOptions{}); err != nil || len(list) != 0 {
				t.Errorf("after a refused record: %d conversations, %v; want none", len(list), err)
			}
		})
	}
}

func TestRecordOutbound(t *testing.T) {
	t.Parallel()
	led, _ := openLedger(t)
	svc := New(led, Config{})
	res, err := svc.RecordOutbound(t.Context(), goodRecord())
	if err != nil || res != (RecordResult{Owner: "out:macmini", ContextID: "c1", LastSeq: 3}) {
		t.Fatalf("RecordOutbound() = %+v, %v", res, err)
	}
	show, err := svc.Show(t.Context(), Ref{ContextID: "c1"}, ShowOptions{})
	if err != nil || len(show.Entries) != 3 || show.Entries[1].Parts[0].Text != "echo: hello" || show.Conversation.Peer != "out:macmini" {
		t.Errorf("Show() = %+v, %v", show, err)
	}
}

// secretCorpus: texts holding credentials in the formats redact.Text knows, and
// the part of each that must never be stored.
var secretCorpus = []struct{ text, secret string }{
	{"key: sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90_Uv-Wx", "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90"},
	{"aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
	{"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 works", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"},
	{"curl -H 'Authorization: Bearer abc.def-ghi' https://api", "abc.def-ghi"},
	{"here:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98xKEYSECRET\nQUJDREVGR0g=\n-----END RSA PRIVATE KEY-----\nthanks", "MIIEowIBAAKCAQEA7bq98xKEYSECRET"},
	{"DATABASE_URL=postgres://app:s3cr3t-P@ss@db.internal:5432/app", "s3cr3t-P"},
}

// TestRecordOutbound_Redacts: the message, the reply and the metadata of an outbound
// exchange are redacted as a turn's are; no secret reaches the file.
func TestRecordOutbound_Redacts(t *testing.T) {
	t.Parallel()
	led, path := openLedger(t)
	svc := New(led, Config{})
	var all []string
	for _, c := range secretCorpus {
		all = append(all, c.text)
	}
	rec := goodRecord()
	rec.Text = strings.Join(all, "\n")
	rec.Reply = "you said: " + rec.Text
	rec.RemoteTaskID = "task " + secretCorpus[0].text
	rec.PeerURL = "http://127.0.0.1:9/?key=" + secretCorpus[1].secret
	if _, err := svc.RecordOutbound(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := svc.Export(t.Context(), Ref{ContextID: rec.ContextID}, &buf); err != nil {
		t.Fatal(err)
	}
	if err := led.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range secretCorpus {
		if bytes.Contains(raw, []byte(c.secret)) || bytes.Contains(buf.Bytes(), []byte(c.secret)) {
			t.Errorf("secret %q is stored in clear", c.secret)
		}
	}
	if !bytes.Contains(buf.Bytes(), []byte("[redacted:")) {
		t.Errorf("export holds no redaction placeholder:\n%s", buf.Bytes())
	}
}

// TestRecordOutbound_ViaAndOrigin: a tool's exchange is recorded under the turn owner's
// own outbound owner, and its message carries the call it came from.
func TestRecordOutbound_ViaAndOrigin(t *testing.T) {
	t.Parallel()
	led, _ := openLedger(t)
	svc := New(led, Config{})
	rec := goodRecord()
	rec.Via, rec.Origin = "bob", &Origin{Owner: "bob", ContextID: "ctx-b", TaskID: "t1", EntryID: "e1"}
	res, err := svc.RecordOutbound(t.Context(), rec)
	if err != nil || res.Owner != "out:macmini@bob" {
		t.Fatalf("RecordOutbound() = %+v, %v; want owner out:macmini@bob", res, err)
	}
	entries, err := led.Last(t.Context(), res.Owner, rec.ContextID, 10, nil)
	if err != nil || len(entries) == 0 {
		t.Fatalf("Last() = %d entries, %v", len(entries), err)
	}
	if want := `{"origin":{"owner":"bob","contextId":"ctx-b","taskId":"t1","entryId":"e1"}}`; string(entries[0].Metadata) != want {
		t.Errorf("the outbound message's metadata %s, want %s", entries[0].Metadata, want)
	}
}
