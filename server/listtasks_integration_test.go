//go:build integration

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/pgtest"
)

// parkAgent parks a task's first turn on input-required and completes the next one.
type parkAgent struct{}

func (parkAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	if strings.HasPrefix(t.Text, "park") {
		return agent.Result{InputRequired: true}, emit("which one?")
	}
	return agent.Result{}, emit("done: " + t.Text)
}

type listPage struct {
	Tasks []struct {
		ID string `json:"id"`
	} `json:"tasks"`
	NextPageToken *string `json:"nextPageToken"`
	PageSize      int     `json:"pageSize"`
	TotalSize     int     `json:"totalSize"`
}

func (p listPage) ids() []string {
	var ids []string
	for _, t := range p.Tasks {
		ids = append(ids, t.ID)
	}
	return ids
}

// listTasksPage asks ListTasks (v1.0) with params and returns the page.
func listTasksPage(t *testing.T, c *http.Client, url, params string) listPage {
	t.Helper()
	r := postRPC(t, c, url, true, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":`+params+`}`)
	var p listPage
	if r.Error != nil || json.Unmarshal(r.Result, &p) != nil || p.NextPageToken == nil {
		t.Fatalf("ListTasks(%s) = %s %+v; want a page with nextPageToken", params, r.Result, r.Error)
	}
	return p
}

// TestListTasksCursorBothStores: on bbolt and on PostgreSQL, ListTasks pages by cursor
// over the wire: a task created and a task updated between two pages repeat nothing and
// skip no task that stayed as it was; the last page's nextPageToken is ""; a token the
// server did not issue is -32602 naming pageToken.
func TestListTasksCursorBothStores(t *testing.T) {
	for _, store := range []string{"bbolt", "postgres"} {
		t.Run(store, func(t *testing.T) {
			cfg := testConfig(t)
			if store == "postgres" {
				cfg.Store = pgtest.Database(t)
			}
			s := startServer(t, cfg, WithAgent(parkAgent{}))
			c := newHTTPClient(t)
			var ids []string // oldest first
			for i := range 5 {
				ids = append(ids, sendV1(t, c, s.URL(), fmt.Sprint("page-", i), fmt.Sprint("park-", i), "").ID)
			}
			p1 := listTasksPage(t, c, s.URL(), `{"pageSize":2}`)
			if !slices.Equal(p1.ids(), []string{ids[4], ids[3]}) || *p1.NextPageToken == "" || p1.TotalSize != 5 || p1.PageSize != 2 {
				t.Fatalf("page 1 = %+v; want the two newest of 5", p1)
			}
			sendV1(t, c, s.URL(), "page-new", "park-new", "") // created between the pages
			r := postRPC(t, c, s.URL(), true, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-go-on","taskId":%q,"parts":[{"text":"go on"}]}}}`, ids[0]))
			if r.Error != nil || !strings.Contains(string(r.Result), "TASK_STATE_COMPLETED") { // updated between the pages
				t.Fatalf("continuing the oldest task = %s %+v", r.Result, r.Error)
			}
			p2 := listTasksPage(t, c, s.URL(), fmt.Sprintf(`{"pageSize":2,"pageToken":%q}`, *p1.NextPageToken))
			if !slices.Equal(p2.ids(), []string{ids[2], ids[1]}) || *p2.NextPageToken != "" || p2.TotalSize != 6 {
				t.Errorf("page 2 = %+v; want %v, the last page (nextPageToken \"\") of 6", p2, []string{ids[2], ids[1]})
			}
			all := listTasksPage(t, c, s.URL(), `{"pageSize":100}`)
			if len(all.Tasks) != 6 || all.Tasks[0].ID != ids[0] || *all.NextPageToken != "" {
				t.Errorf("a new pass = %+v; want all 6, the updated task first", all)
			}
			for _, token := range []string{"Mg", "bm90IGEgdG9rZW4", *p1.NextPageToken + "x"} {
				r := postRPC(t, c, s.URL(), true, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"pageToken":%q}}`, token))
				if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "pageToken") {
					t.Errorf("ListTasks with page token %q = %s %+v; want -32602 naming pageToken", token, r.Result, r.Error)
				}
			}
		})
	}
}
