package console

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
)

// realService is the conversations service over a bbolt ledger in t's temp dir with n
// conversations ("ctx-000" …) of peer-a and peer-b; those whose number is a multiple of 10
// are "running".
func realService(t *testing.T, n int) *conversations.Service {
	t.Helper()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var tick atomic.Int64
	led, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{NoSync: true, Now: func() time.Time {
		return start.Add(time.Duration(tick.Add(1)) * time.Second)
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	for i := range n {
		owner := []string{"peer-a", "peer-b"}[i%2]
		_, err := led.Append(t.Context(), ledger.AppendRequest{Owner: owner, ContextID: fmt.Sprintf("ctx-%03d", i), BeginTurn: true, Entries: []ledger.Entry{
			{TaskID: fmt.Sprintf("t-%d", i), Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
				Actor: owner, Role: ledger.RoleUser, Parts: []ledger.Part{{Kind: ledger.PartText, Text: "hi"}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return conversations.New(led, conversations.Config{Running: func(_ context.Context, _, contextID string) string {
		var i int
		if _, err := fmt.Sscanf(contextID, "ctx-%d", &i); err == nil && i%10 == 0 {
			return fmt.Sprintf("t-%d", i)
		}
		return ""
	}})
}

var rowRe = regexp.MustCompile(`class="ctx" href="[^"]*">([^<]+)</a>`)
var nextRe = regexp.MustCompile(`id="next" href="([^"]+)"`)

// TestListPaging: the list pages through the service's cursor (50 a page), and filters
// by prefix, peer and state.
func TestListPaging(t *testing.T) {
	t.Parallel()
	h, err := New(Config{Service: realService(t, 120)})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(path string) (rows []string, next string) {
		req := httpRequest(path)
		rec := recorder(h, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		for _, m := range rowRe.FindAllStringSubmatch(rec.Body.String(), -1) {
			rows = append(rows, m[1])
		}
		if m := nextRe.FindStringSubmatch(rec.Body.String()); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		return rows, next
	}
	seen := map[string]bool{}
	path, pages := "/console/", 0
	for path != "" {
		rows, next := fetch(path)
		pages++
		for _, r := range rows {
			if seen[r] {
				t.Fatalf("page %d repeats %s", pages, r)
			}
			seen[r] = true
		}
		path = next
	}
	if len(seen) != 120 || pages != 3 {
		t.Errorf("paged through %d conversations in %d pages, want 120 in 3", len(seen), pages)
	}
	rec := recorder(h, httpRequest("/console/?prefix=ctx-010"))
	if body := rec.Body.String(); !strings.Contains(body, "t-10 <span class=\"for\">(for ") {
		t.Errorf("the running task's row does not say how long it has run:\n%s", body)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"prefix=ctx-01", 10},
		{"prefix=ctx-01&peer=peer-a", 5},
		{"prefix=ctx-0&state=running", 10},
		{"prefix=ctx-0&state=idle", 90},
	} {
		total := 0
		for path := "/console/?" + tc.query; path != ""; {
			var rows []string
			rows, path = fetch(path)
			total += len(rows)
		}
		if total != tc.want {
			t.Errorf("%s: %d conversations, want %d", tc.query, total, tc.want)
		}
	}
}
