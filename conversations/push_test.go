package conversations

import (
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/ledgertest"
)

// TestShowPushEntries: show --all lists a task's push config, queued event and attempts
// readably, with the receiver's secrets redacted; without --all they are left out.
func TestShowPushEntries(t *testing.T) {
	led, _ := openLedger(t)
	turn(t, led, "alice", "c", "hi")
	task := "t-alice-c-hi"
	cfg := ledgertest.PushConfigEntry(task, ledger.PushConfig{ID: "c1", Dialect: "1.0", URL: "https://h.example/hook", Token: "s3cret-token", AuthCredentials: "s3cret-cred", AuthSchemes: []string{"Bearer"}})
	res, err := led.Append(t.Context(), ledger.AppendRequest{Owner: "alice", ContextID: "c", Entries: []ledger.Entry{cfg, ledgertest.PushOutboxEntry(task, "c1")}})
	if err != nil {
		t.Fatal(err)
	}
	outbox := res.Entries[1]
	attempt := ledgertest.PushAttemptEntry(task, outbox.Seq, 1, false)
	if _, err := led.Append(t.Context(), ledger.AppendRequest{Owner: "alice", ContextID: "c", Entries: []ledger.Entry{attempt}}); err != nil {
		t.Fatal(err)
	}
	svc := New(led, Config{})
	all, err := svc.Show(t.Context(), Ref{ContextID: "c"}, ShowOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range all.Entries {
		e := &all.Entries[i]
		if strings.Contains(string(e.Metadata), "s3cret") {
			t.Errorf("entry %d shows a secret: %s", e.Seq, e.Metadata)
		}
		if s := PushText(e); s != "" {
			lines = append(lines, s)
		}
	}
	want := []string{
		"set c1 → https://h.example/hook (1.0)",
		"queued event " + outbox.ID + " for config c1 → https://example.com/hook",
		"attempt 1 of event : retry, HTTP 500 in 0.0 ms: HTTP 500; next at " + time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Format("15:04:05Z"),
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("push lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(string(all.Entries[2].Metadata), `"token":"[redacted]"`) {
		t.Errorf("config metadata = %s, want the token redacted", all.Entries[2].Metadata)
	}
	plain, _ := svc.Show(t.Context(), Ref{ContextID: "c"}, ShowOptions{})
	if len(plain.Entries) != 2 {
		t.Errorf("show without --all: %d entries, want the 2 messages only", len(plain.Entries))
	}
}
