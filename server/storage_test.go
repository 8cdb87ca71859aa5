package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/a2a-gateway/gateway/internal/testutil"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
)

// storageFault is a switchable storage failure for ledger.Options.WriteFault: while set,
// every ledger write fails with err as a write to the data file would.
type storageFault struct{ err atomic.Pointer[error] }

func (f *storageFault) set(err error) { f.err.Store(&err) }
func (f *storageFault) clear()        { f.err.Store(nil) }

// writeFault is the ledger.Options.WriteFault hook: every write fails alike.
func (f *storageFault) writeFault(string) error {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return nil
}

// withStorageFault makes the server's ledger fail its writes while f is set.
func withStorageFault(f *storageFault) Option {
	return func(d *serverDeps) { d.ledger = func(o *ledger.Options) { o.WriteFault = f.writeFault } }
}

// storageRPCError is the part of a JSON-RPC error a peer acts on.
type storageRPCError struct {
	Code     int
	Message  string
	Reason   string
	Domain   string
	Metadata map[string]string
}

// sendStorage sends text to contextID (blocking; v1 SendMessage or v0.3 message/send)
// and returns the JSON-RPC error with its ErrorInfo, or nil when the turn was accepted.
func sendStorage(t *testing.T, c *http.Client, url string, v1 bool, contextID, messageID, text string) *storageRPCError {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":%q,"contextId":%q,"parts":[{"kind":"text","text":%q}]}}}`, messageID, contextID, text)
	if v1 {
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":%q,"contextId":%q,"parts":[{"text":%q}]}}}`, messageID, contextID, text)
	}
	r := postRPC(t, c, url, v1, body)
	if r.Error == nil {
		return nil
	}
	type errorInfo struct {
		Reason   string            `json:"reason"`
		Domain   string            `json:"domain"`
		Metadata map[string]string `json:"metadata"`
	}
	var info errorInfo
	if v1 { // an array of details, the ErrorInfo first
		var details []errorInfo
		if json.Unmarshal(r.Error.Data, &details) == nil && len(details) > 0 {
			info = details[0]
		}
	} else {
		_ = json.Unmarshal(r.Error.Data, &info)
	}
	return &storageRPCError{Code: r.Error.Code, Message: r.Error.Message, Reason: info.Reason, Domain: info.Domain, Metadata: info.Metadata}
}

// readyz returns /readyz's status and body.
// waitReady polls /readyz until it answers 200 (the ledger probes its storage at most
// once a second), failing the test at its deadline with the last answer.
func waitReady(t *testing.T, c *http.Client, url, when string) {
	t.Helper()
	var code int
	var body string
	if !testutil.Until(testutil.Deadline(t), func() bool {
		code, body = readyz(t, c, url)
		return code == http.StatusOK
	}) {
		t.Fatalf("/readyz %s = %d %q, want 200", when, code, body)
	}
}

func readyz(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url + "readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStorageFullNamesTheCause (issue #15 item 4): while the ledger's writes fail with
// ENOSPC (injected below the commit through ledger.Options.WriteFault), a turn is refused
// with -32000 STORAGE_UNAVAILABLE naming the cause and a retry hint, and /readyz answers
// 503 naming it; once space is back /readyz returns to 200 by itself (the ledger's probe,
// with no turn to commit), turns commit again, and nothing of the refused message was
// stored (the ledger verifies).
//
// Before the fix: the turn got -32603 "internal error" with no reason, and /readyz 200.
func TestStorageFullNamesTheCause(t *testing.T) {
	fault := &storageFault{}
	cfg := testConfig(t)
	s := startServer(t, cfg, withStorageFault(fault))
	c := newHTTPClient(t)
	if e := sendStorage(t, c, s.URL(), false, "disk", "m-before", "before"); e != nil {
		t.Fatalf("send before the fault = %+v, want ok", e)
	}

	fault.set(&os.PathError{Op: "write", Path: filepath.Join(cfg.DataDir, "ledger.db"), Err: syscall.ENOSPC})
	want := &storageRPCError{Code: -32000, Reason: "STORAGE_UNAVAILABLE", Domain: "a2a-gateway",
		Message:  "the gateway's storage is full; nothing of this request was stored; retry later",
		Metadata: map[string]string{"cause": "full"}}
	for _, v1 := range []bool{false, true} {
		got := sendStorage(t, c, s.URL(), v1, "disk", "m-refused", "while full")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("send (v1 %v) while the disk is full (-want +got):\n%s", v1, diff)
		}
	}
	if code, body := readyz(t, c, s.URL()); code != http.StatusServiceUnavailable || !strings.Contains(body, "full") {
		t.Errorf("/readyz while the disk is full = %d %q, want 503 naming the cause (full)", code, body)
	}

	fault.clear()
	waitReady(t, c, s.URL(), "after space came back")
	if e := sendStorage(t, c, s.URL(), true, "disk", "m-after", "after"); e != nil {
		t.Fatalf("send after space came back = %+v, want ok", e)
	}

	stopServer(t, s)
	assertNothingHalfStored(t, cfg.DataDir, "m-refused", []string{"m-before", "m-after"})
}

// assertNothingHalfStored opens the ledger in dataDir offline: it must verify, hold the
// messages of want and nothing of the message refused.
func assertNothingHalfStored(t *testing.T, dataDir, refused string, want []string) {
	t.Helper()
	led, err := ledger.Open(filepath.Join(dataDir, "ledger.db"), ledger.Options{}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	if n, err := led.VerifyAll(t.Context()); err != nil || n != 1 {
		t.Fatalf("VerifyAll() = %d, %v; want 1 conversation, nil", n, err)
	}
	entries, err := led.Range(t.Context(), "local", "disk", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, e := range entries {
		if e.MessageID == refused {
			t.Errorf("entry %d holds the refused message %q: %+v", e.Seq, refused, e)
		}
		if e.Kind == ledger.KindUserMessage {
			users = append(users, e.MessageID)
		}
	}
	if fmt.Sprint(users) != fmt.Sprint(want) {
		t.Errorf("user messages stored = %v, want %v", users, want)
	}
}
