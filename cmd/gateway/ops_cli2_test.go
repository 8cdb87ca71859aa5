package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/server"
)

// sendTurns sends texts in contextID to s (as the peer "local") and returns the task ids.
func sendTurns(t *testing.T, s *server.Server, contextID string, texts ...string) []string {
	t.Helper()
	c := newHTTPClient(t)
	var ids []string
	for _, text := range texts {
		r := sendV03(t, c, s.URL(), contextID, text)
		if r.Error != nil {
			t.Fatalf("send %q to %q: %+v", text, contextID, r.Error)
		}
		var task struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(r.Result, &task)
		ids = append(ids, task.ID)
	}
	return ids
}

// TestReplayPastEnd (issue #15 item 13): --at past the conversation's last seq is an
// error naming the last seq (exit 2), through the admin API and offline; it printed the
// last turn with exit 0 before.
func TestReplayPastEnd(t *testing.T) {
	s := startServer(t, testConfig(t))
	sendTurns(t, s, "r1", "one", "two")
	conv, err := s.Ledger().Conversation(t.Context(), "local", "r1")
	if err != nil {
		t.Fatal(err)
	}
	server := "http://" + s.Addr()
	check := func(name string, args ...string) {
		t.Helper()
		out, _, err := runCLI(t, args...)
		var pe *conversations.PastEndError
		if !errors.As(err, &pe) || pe.LastSeq != conv.LastSeq || pe.AtSeq != 9999 || exitCode(err) != 2 {
			t.Errorf("%s: replay --at 9999 = %v (exit %d), stdout %q; want a *PastEndError at 9999, last seq %d, exit 2",
				name, err, exitCode(err), out, conv.LastSeq)
		}
		if err != nil && !strings.Contains(err.Error(), "last seq is "+itoa(conv.LastSeq)) {
			t.Errorf("%s: error %q does not name the last seq %d", name, err, conv.LastSeq)
		}
	}
	check("admin API", "conversations", "replay", "r1", "--at", "9999", "--server", server)

	// The admin API answers 400 with the values.
	resp, err := http.Get(server + "/admin/v1/conversations/r1/replay?" + url.Values{"at": {"9999"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Code    string `json:"code"`
		LastSeq uint64 `json:"lastSeq"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || body.Code != "past_end" || body.LastSeq != conv.LastSeq {
		t.Errorf("GET replay?at=9999 = %d %+v; want 400 past_end with lastSeq %d", resp.StatusCode, body, conv.LastSeq)
	}

	// The last seq itself still replays.
	if _, _, err := runCLI(t, "conversations", "replay", "r1", "--at", itoa(conv.LastSeq), "--server", server); err != nil {
		t.Errorf("replay --at %d (the last seq) = %v, want nil", conv.LastSeq, err)
	}

	stopServer(t, s)
	check("offline", "conversations", "replay", "r1", "--at", "9999", "--server", closedURL(t), "--data-dir", s.Config().DataDir)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestShowWholeTaskIDs (issue #15 item 13): `conversations show` prints whole task ids;
// it cut them to 8 characters, which UUIDv7 ids made in the same minute share.
func TestShowWholeTaskIDs(t *testing.T) {
	s := startServer(t, testConfig(t))
	ids := sendTurns(t, s, "ids", "one", "two")
	if ids[0][:8] != ids[1][:8] {
		t.Logf("task ids %s and %s differ in their first 8 characters (made across a minute)", ids[0], ids[1])
	}
	out, _, err := runCLI(t, "conversations", "show", "ids", "--server", "http://"+s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if !strings.Contains(out, "task "+id) {
			t.Errorf("show does not print the whole task id %s:\n%s", id, out)
		}
	}
}

// TestOpsSaysWhatItReads (issue #15 item 13): every operator command says on stderr
// which gateway (and ledger) or which data dir it read; --quiet drops the line.
func TestOpsSaysWhatItReads(t *testing.T) {
	s := startServer(t, testConfig(t))
	sendTurns(t, s, "said", "one")
	server := "http://" + s.Addr()
	for _, args := range [][]string{
		{"conversations", "list"},
		{"conversations", "show", "said"},
		{"conversations", "export", "said"},
		{"conversations", "replay", "said"},
		{"ledger", "verify"},
	} {
		_, stderr, err := runCLI(t, append(args, "--server", server)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		want := "gateway: reading the gateway at " + server + " (its admin API"
		if !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: stderr = %q, want one line starting %q", args, stderr, want)
		}
		_, stderr, err = runCLI(t, append(args, "--server", server, "--quiet")...)
		if err != nil || stderr != "" {
			t.Errorf("%v --quiet: stderr = %q, %v; want nothing", args, stderr, err)
		}
	}
}
