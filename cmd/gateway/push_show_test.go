package main

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/ledgertest"
)

// TestConversationsShowPushAttempts: `conversations show --all` lists a task's push
// config, queued event and attempts readably, and never prints the receiver's secrets;
// without --all they are left out.
func TestConversationsShowPushAttempts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	led, err := ledger.Open(filepath.Join(dir, "ledger.db"), ledger.Options{NoSync: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	res, err := led.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "pc", Entries: []ledger.Entry{
		{TaskID: "t1", Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: "working"},
		ledgertest.PushConfigEntry("t1", ledger.PushConfig{ID: "hook", Dialect: "1.0", URL: "https://h.example/hook", Token: "tok-s3cret"}),
		ledgertest.PushOutboxEntry("t1", "hook"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	outbox := res.Entries[2]
	if _, err := led.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "pc", Entries: []ledger.Entry{
		ledgertest.PushAttemptEntry("t1", outbox.Seq, 1, false), ledgertest.PushAttemptEntry("t1", outbox.Seq, 2, true),
	}}); err != nil {
		t.Fatal(err)
	}
	if err := led.Close(); err != nil {
		t.Fatal(err)
	}
	offline := []string{"--server", "http://127.0.0.1:1", "--data-dir", dir}
	out, _, err := runCLI(t, append([]string{"conversations", "show", "pc", "--all"}, offline...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"push-config task t1 set hook → https://h.example/hook (1.0)",
		"push-outbox task t1 queued event " + outbox.ID + " for config hook",
		"push-attempt task t1 attempt 1 of event : retry, HTTP 500 in 0.0 ms: HTTP 500; next at 00:00:00Z",
		"push-attempt task t1 attempt 2 of event : delivered, HTTP 200 in 0.0 ms",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("show --all lacks %q:\n%s", want, out)
		}
	}
	js, _, err := runCLI(t, append([]string{"conversations", "show", "pc", "--all", "--json"}, offline...)...)
	if err != nil || strings.Contains(js, "s3cret") || !strings.Contains(js, `[redacted]`) {
		t.Errorf("show --all --json (err %v) shows the token or does not redact it:\n%s", err, js)
	}
	plain, _, _ := runCLI(t, append([]string{"conversations", "show", "pc"}, offline...)...)
	if strings.Contains(plain, "push-") {
		t.Errorf("show without --all lists push entries:\n%s", plain)
	}
}
