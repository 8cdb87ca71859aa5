package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/server"
)

// Issue #15 item 3: a damaged ledger, end to end. Each damage class is made on a real
// ledger (written through ledger.Open and Append in the data dir, closed, then changed in
// place); then `gateway ledger verify` must name the break without a panic, `gateway
// ledger salvage` must copy the intact conversations, and the server must start, serve
// an intact conversation and refuse the damaged one with -32603 CONVERSATION_DAMAGED.
//
// The test finds what to change in the raw file: the page size from bbolt's meta page,
// the victim's log pages by the text of its messages (its messages are large, so that the
// log pages around one of them hold only the victim's entries), the branch page of the
// heads by bbolt's page header (flags 0x01). Stale copies of a page (free pages an append
// left behind) are changed too; they are free, so that does nothing.

const (
	damagePeer = "local" // the peer of every request without peer tokens
	intactCtx  = "intact-1"
	victimCtx  = "victim"
	bigCtx     = "big"
)

// writeDamageLedger writes the ledger of the test into dataDir: three conversations of 4
// turns, "big", of 40 turns, and smallConvs small ones.
func writeDamageLedger(t *testing.T, dataDir string) {
	t.Helper()
	led, err := ledger.Open(filepath.Join(dataDir, "ledger.db"), ledger.Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// ~8 KiB per message: a log page (16 KiB) holds at most one of them, so the page that
	// holds a turn's message holds only entries of that conversation's turns around it.
	pad := strings.Repeat("lorem ipsum ", 700)
	for _, c := range []struct {
		cid   string
		turns int
	}{{intactCtx, 4}, {victimCtx, 4}, {bigCtx, 40}, {"intact-2", 4}} {
		for i := range c.turns {
			task := fmt.Sprintf("%s-task-%d", c.cid, i)
			_, err := led.Append(context.Background(), ledger.AppendRequest{Owner: damagePeer, ContextID: c.cid, BeginTurn: true, Entries: []ledger.Entry{
				{TaskID: task, Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser,
					MessageID: task + "-m", Parts: []ledger.Part{{Kind: ledger.PartText, Text: fmt.Sprintf("%s-turn-%d-marker %s", c.cid, i, pad)}}},
				{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: "working"},
				{TaskID: task, Kind: ledger.KindAgentReply, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel, Role: ledger.RoleAgent,
					MessageID: task + "-r", Parts: []ledger.Part{{Kind: ledger.PartText, Text: "reply " + pad}}},
				{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: "completed"},
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range smallConvs {
		cid := fmt.Sprintf("small-%02d", i)
		_, err := led.Append(context.Background(), ledger.AppendRequest{Owner: damagePeer, ContextID: cid, BeginTurn: true, Entries: []ledger.Entry{
			{TaskID: cid + "-task-0", Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser,
				Parts: []ledger.Part{{Kind: ledger.PartText, Text: pad}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := led.Close(); err != nil {
		t.Fatal(err)
	}
}

// smallConvs is how many one-message conversations the ledger holds besides the four
// others: enough heads for the heads' tree to need a branch page.
const smallConvs = 150

// damageFile changes the ledger in dataDir with fn, given the file's bytes and page size.
func damageFile(t *testing.T, dataDir string, fn func(b []byte, pageSize int)) {
	t.Helper()
	path := filepath.Join(dataDir, "ledger.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// bbolt's meta page 0: a 16-byte page header, then magic, version, pageSize (u32 each).
	fn(b, int(binary.LittleEndian.Uint32(b[16+8:])))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// eachIndex calls fn with the offset of every occurrence of sub in b.
func eachIndex(t *testing.T, b []byte, sub string, fn func(i int)) {
	t.Helper()
	n := 0
	for off := 0; ; n++ {
		i := bytes.Index(b[off:], []byte(sub))
		if i < 0 {
			break
		}
		fn(off + i)
		off += i + len(sub)
	}
	if n == 0 {
		t.Fatalf("%q not in the ledger file", sub)
	}
}

var serveDamageClasses = []struct {
	name   string
	victim string
	trees  []string // the index trees `ledger verify` names besides the victim
	damage func(t *testing.T, b []byte, pageSize int)
}{
	{"a_page_header", victimCtx, []string{"v1.log"}, func(t *testing.T, b []byte, ps int) {
		pages := map[int]bool{}
		eachIndex(t, b, victimCtx+"-turn-2-marker", func(i int) { pages[i/ps] = true })
		for p := range pages {
			b[p*ps] ^= 0x01 // the page's id: "self identifies as"
		}
	}},
	{"b_entry_json", victimCtx, nil, func(t *testing.T, b []byte, _ int) {
		// In the last task, which the server reads at start (recovering interrupted turns).
		eachIndex(t, b, victimCtx+"-turn-3-marker", func(i int) { b[i] = 0x01 }) // invalid inside a JSON string
	}},
	{"c_kind_byte", victimCtx, nil, func(t *testing.T, b []byte, _ int) {
		eachIndex(t, b, victimCtx+"-turn-3-marker", func(i int) {
			start := bytes.LastIndex(b[:i], []byte(`{"id":`))
			k := bytes.Index(b[start:i], []byte(`"kind":"USER_MESSAGE"`))
			if start < 0 || k < 0 {
				t.Fatal("the user message's kind not found")
			}
			b[start+k+len(`"kind":"`)] ^= 0x03 // USER_MESSAGE → VSER_MESSAGE: still JSON
		})
	}},
	// The branch page of the heads' tree: branch element 1's key (a conversation's key,
	// "v1/<64 hex>") lowered by one. It still sorts between its neighbours (the keys are
	// sparse), so bbolt's checks pass; it no longer equals the first key of the page
	// below. (In the log's tree the keys are consecutive positions: any change of a
	// branch key there breaks bbolt's order check.) No conversation is lost, only the way
	// to one: victim "".
	{"d_branch_key", "", []string{"v1.heads"}, func(t *testing.T, b []byte, ps int) {
		n := 0
		for p := 2; (p+1)*ps <= len(b); p++ {
			pg := b[p*ps : (p+1)*ps]
			// bbolt's page header: id u64, flags u16, count u16; a branch element: pos u32,
			// ksize u32, pgid u64, pos counting from the element.
			if binary.LittleEndian.Uint16(pg[8:]) != 0x01 || binary.LittleEndian.Uint16(pg[10:]) < 2 {
				continue
			}
			off := 16 + 16 // element 1
			pos, ksize := int(binary.LittleEndian.Uint32(pg[off:])), int(binary.LittleEndian.Uint32(pg[off+4:]))
			if ksize != 67 || off+pos+ksize > len(pg) || !bytes.HasPrefix(pg[off+pos:], []byte("v1/")) {
				continue
			}
			pg[off+pos+ksize-1]--
			n++
		}
		if n == 0 {
			t.Fatal("no branch page of the heads' tree found")
		}
	}},
}

func TestLedgerDamage_VerifySalvageServe(t *testing.T) {
	t.Parallel()
	for _, dc := range serveDamageClasses {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			writeDamageLedger(t, cfg.DataDir)
			damageFile(t, cfg.DataDir, func(b []byte, ps int) { dc.damage(t, b, ps) })
			verifyNamesDamage(t, cfg.DataDir, dc.victim, dc.trees)
			salvageSkipsDamage(t, cfg.DataDir, dc.victim)
			serveRefusesDamage(t, cfg, dc.victim)
		})
	}
}

// ledgerCmd runs `gateway ledger ARGS...` offline (no gateway answers at --server).
func ledgerCmd(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"ledger"}, args...)
	err = run(t.Context(), args, func(string) (string, bool) { return "", false }, &out, &errOut)
	return out.String(), err
}

// verifyNamesDamage: `gateway ledger verify` fails and names the victim and the damaged
// index trees (a damaged log page is the log's and the victim's), and nothing else.
func verifyNamesDamage(t *testing.T, dataDir, victim string, trees []string) {
	t.Helper()
	out, err := ledgerCmd(t, "verify", "--data-dir", dataDir, "--server", "http://127.0.0.1:1")
	if err == nil {
		t.Fatalf("ledger verify passed a damaged ledger; output:\n%s", out)
	}
	t.Logf("verify: %s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := len(trees)
	if victim != "" {
		want++
	}
	if len(lines) != want {
		t.Fatalf("ledger verify output:\n%s\nwant %d BROKEN lines: %q and %v", out, want, victim, trees)
	}
	named := victim == ""
	for _, line := range lines {
		tree := slices.ContainsFunc(trees, func(tr string) bool { return strings.Contains(line, "the "+tr+" index") })
		named = named || (!tree && mentions(line, victim))
		if !strings.HasPrefix(line, "BROKEN") || (!tree && !mentions(line, victim)) {
			t.Fatalf("ledger verify output:\n%s\nline %q names neither %q nor %v", out, line, victim, trees)
		}
	}
	if !named {
		t.Fatalf("ledger verify output:\n%s\nno line names %q", out, victim)
	}
}

// mentions reports whether line names the conversation cid of damagePeer: its contextId,
// or its storage key when the damage hides its contextId.
func mentions(line, cid string) bool {
	if cid == "" {
		return true
	}
	return strings.Contains(line, fmt.Sprintf("%q", cid)) || strings.Contains(line, convKey(cid))
}

func convKey(cid string) string {
	return contextid.Key(damagePeer, cid)
}

// salvageSkipsDamage: `gateway ledger salvage` copies the three intact conversations,
// names the victim, and the copy verifies.
func salvageSkipsDamage(t *testing.T, dataDir, victim string) {
	t.Helper()
	outDir := t.TempDir()
	out, err := ledgerCmd(t, "salvage", "--data-dir", dataDir, "--out", filepath.Join(outDir, "ledger.db"))
	if err != nil {
		t.Fatalf("ledger salvage error = %v; output:\n%s", err, out)
	}
	all := 4 + smallConvs
	switch {
	case victim == "" && (!strings.Contains(out, fmt.Sprintf("salvaged %d conversation(s)", all)) || strings.Contains(out, "SKIPPED")):
		t.Fatalf("ledger salvage output:\n%s\nwant all %d salvaged", out, all)
	case victim != "" && (!strings.Contains(out, fmt.Sprintf("salvaged %d conversation(s)", all-1)) || !strings.Contains(out, "SKIPPED") || !mentions(out, victim)):
		t.Fatalf("ledger salvage output:\n%s\nwant %d salvaged and %q skipped", out, all-1, victim)
	}
	if out, err := ledgerCmd(t, "verify", "--data-dir", outDir, "--server", "http://127.0.0.1:1"); err != nil {
		t.Fatalf("ledger verify of the salvaged copy: %v\n%s", err, out)
	}
}

// serveRefusesDamage: the server starts, runs a turn in an intact conversation, refuses
// one in the victim with -32603 CONVERSATION_DAMAGED, and /readyz says it is degraded.
func serveRefusesDamage(t *testing.T, cfg server.Config, victim string) {
	t.Helper()
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	send := func(cid string) rpcResponse {
		return postRPC(t, c, s.URL(), false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"new-%s","contextId":%q,"parts":[{"kind":"text","text":"again"}]}}}`, cid, cid))
	}
	if r := send(intactCtx); r.Error != nil {
		t.Fatalf("send to an intact conversation: %+v", r.Error)
	}
	if victim == "" {
		for _, cid := range []string{victimCtx, bigCtx, "small-07"} {
			if r := send(cid); r.Error != nil {
				t.Errorf("send to %s: %+v", cid, r.Error)
			}
		}
		return
	}
	r := send(victim)
	if r.Error == nil || r.Error.Code != -32603 || !bytes.Contains(r.Error.Data, []byte(`"CONVERSATION_DAMAGED"`)) {
		t.Fatalf("send to the damaged conversation = %s / %+v, want -32603 CONVERSATION_DAMAGED", r.Result, r.Error)
	}
	get := postRPC(t, c, s.URL(), false, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"%s-task-1"}}`, victim))
	if get.Error == nil {
		t.Fatalf("tasks/get of the damaged conversation's task = %s, want an error", get.Result)
	}
	if ok := bytes.Contains(get.Error.Data, []byte(`"CONVERSATION_DAMAGED"`)) || get.Error.Code == -32001; !ok {
		t.Errorf("tasks/get of the damaged conversation's task: %+v, want CONVERSATION_DAMAGED (or not found when its owner is unreadable)", get.Error)
	}
	resp, err := c.Get(s.URL() + "readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("degraded")) || !mentions(string(body), victim) {
		t.Errorf("/readyz = %d %q, want 200 degraded naming %q", resp.StatusCode, body, victim)
	}
	var task struct {
		Status struct{ State string } `json:"status"`
	}
	if r := send("intact-2"); r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.Status.State != "completed" {
		t.Errorf("second intact conversation: %s %+v", r.Result, r.Error)
	}
}
