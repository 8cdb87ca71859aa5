package turn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
)

// parkingAgent parks a task's first turn on input-required ("which one?") and completes
// its next one.
var parkingAgent = funcAgent(func(ctx context.Context, tu agent.Turn, emit agent.Emit) (agent.Result, error) {
	if strings.HasPrefix(tu.Text, "park") {
		return agent.Result{InputRequired: true}, emit("which one?")
	}
	return agent.Result{}, emit("done: " + tu.Text)
})

func taskIDs(ts []a2a.Task) []string {
	ids := make([]string, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
	}
	return ids
}

// TestListTasksCursor: a page token is a cursor. Between two pages a task is created and
// another one's status changes: the second page holds exactly the tasks after the first
// page's last one that existed unchanged across both reads, none repeated (an offset
// repeated the first page's last task), and it is the last page (nextPageToken "").
// The changed task moved before the cursor, so this pass does not show it again.
func TestListTasksCursor(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, parkingAgent)
	ctx := localCtx(t)
	var ids []string // oldest first
	for i := range 5 {
		res, err := send(ctx, r, fmt.Sprint("cursor-", i), "", fmt.Sprint("park ", i))
		if err != nil || res.Task.Status.State != a2a.StateInputRequired {
			t.Fatalf("send %d = %+v, %v", i, res.Task, err)
		}
		ids = append(ids, res.Task.ID)
	}
	p1, err := r.ListTasks(ctx, &a2a.ListTasksParams{PageSize: 2})
	if err != nil || !slices.Equal(taskIDs(p1.Tasks), []string{ids[4], ids[3]}) || p1.NextPageToken == "" || p1.TotalSize != 5 {
		t.Fatalf("page 1 = %v (total %d, token %q), %v; want the two newest of 5", taskIDs(p1.Tasks), p1.TotalSize, p1.NextPageToken, err)
	}
	if _, err := send(ctx, r, "cursor-new", "", "park new"); err != nil { // created between the pages
		t.Fatal(err)
	}
	if res, err := send(ctx, r, "", ids[0], "go on"); err != nil || res.Task.Status.State != a2a.StateCompleted { // changed
		t.Fatalf("continuing the oldest task = %+v, %v", res.Task, err)
	}
	p2, err := r.ListTasks(ctx, &a2a.ListTasksParams{PageSize: 2, PageToken: p1.NextPageToken})
	if err != nil {
		t.Fatal(err)
	}
	if got := taskIDs(p2.Tasks); !slices.Equal(got, []string{ids[2], ids[1]}) || p2.NextPageToken != "" || p2.TotalSize != 6 {
		t.Errorf("page 2 = %v (total %d, token %q); want %v, the last page of 6", got, p2.TotalSize, p2.NextPageToken, []string{ids[2], ids[1]})
	}
}

// TestListTasksPageTokenRefused: a token this server did not issue (an offset of earlier
// builds, bytes that are not a token) or one issued for other filters is -32602 naming
// pageToken.
func TestListTasksPageTokenRefused(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, parkingAgent)
	ctx := localCtx(t)
	for i := range 3 {
		if _, err := send(ctx, r, "refused", "", fmt.Sprint("park ", i)); err != nil {
			t.Fatal(err)
		}
	}
	p1, err := r.ListTasks(ctx, &a2a.ListTasksParams{ContextID: "refused", PageSize: 1})
	if err != nil || p1.NextPageToken == "" {
		t.Fatalf("page 1 = %+v, %v", p1, err)
	}
	valid := p1.NextPageToken
	for _, tc := range []struct {
		name string
		p    a2a.ListTasksParams
		says string
	}{
		{"offset", a2a.ListTasksParams{ContextID: "refused", PageToken: "Mg"}, "not a page token"},
		{"not base64", a2a.ListTasksParams{ContextID: "refused", PageToken: "***"}, "not a page token"},
		{"cut short", a2a.ListTasksParams{ContextID: "refused", PageToken: valid[:20]}, "not a page token"},
		{"other version", a2a.ListTasksParams{ContextID: "refused", PageToken: "B" + valid[1:]}, "not a page token"},
		{"other context", a2a.ListTasksParams{ContextID: "other", PageToken: valid}, "other filters"},
		{"other status", a2a.ListTasksParams{ContextID: "refused", Status: a2a.StateCompleted, PageToken: valid}, "other filters"},
		{"other time", a2a.ListTasksParams{ContextID: "refused", StatusTimestampAfter: time.Unix(1, 0), PageToken: valid}, "other filters"},
	} {
		res, err := r.ListTasks(ctx, &tc.p)
		var ae *a2a.Error
		if !errors.As(err, &ae) || !errors.Is(err, a2a.ErrInvalidParams) || ae.Field != "pageToken" || !strings.Contains(ae.Message, tc.says) {
			t.Errorf("%s: ListTasks = %+v, %v; want -32602 on pageToken saying %q", tc.name, res, err, tc.says)
		}
	}
	p2, err := r.ListTasks(ctx, &a2a.ListTasksParams{ContextID: "refused", PageSize: 5, PageToken: valid, IncludeArtifacts: true})
	if err != nil || len(p2.Tasks) != 2 {
		t.Errorf("page 2 with another page size and includeArtifacts = %+v, %v; want the 2 other tasks", p2, err)
	}
}

// TestPageOfTies: tasks with the same status timestamp are ordered by id, and the cursor
// keeps that order: pages of a listing whose tasks all share one timestamp hold each
// task once, also when a task is inserted between pages (after the cursor: it is on a
// later page; before it: on none), and the last page has no next cursor.
func TestPageOfTies(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	mk := func(ids ...string) []a2a.Task {
		out := make([]a2a.Task, len(ids))
		for i, id := range ids {
			out[i] = a2a.Task{ID: id, Status: a2a.TaskStatus{Timestamp: ts}}
		}
		return out
	}
	listed := mk("a", "b", "c", "d", "e")
	page, next := pageOf(listed, nil, 2)
	if !slices.Equal(taskIDs(page), []string{"a", "b"}) || next == nil || next.id != "b" {
		t.Fatalf("page 1 = %v, next %+v", taskIDs(page), next)
	}
	listed = mk("a", "aa", "b", "bb", "c", "d", "e") // inserted before and after the cursor
	page, next = pageOf(listed, next, 2)
	if !slices.Equal(taskIDs(page), []string{"bb", "c"}) || next == nil || next.id != "c" {
		t.Fatalf("page 2 = %v, next %+v", taskIDs(page), next)
	}
	page, next = pageOf(listed, next, 2)
	if !slices.Equal(taskIDs(page), []string{"d", "e"}) || next != nil {
		t.Fatalf("page 3 = %v, next %+v; want the last page", taskIDs(page), next)
	}
	c := pageCursor{ts: ts, id: "b"}
	p := &a2a.ListTasksParams{PageToken: encodePageToken(c, &a2a.ListTasksParams{})}
	if got, err := decodePageToken(p); err != nil || !got.ts.Equal(c.ts) || got.id != c.id {
		t.Errorf("token round trip = %+v, %v; want %+v", got, err, c)
	}
}

// TestListTasksStatusTimestampAfterInclusive: statusTimestampAfter keeps the tasks whose
// status timestamp is at or after it (a2a.proto ListTasksRequest: "greater than or equal
// to this value"), so a client that lists again from the newest timestamp it saw misses
// no task updated at that very instant.
func TestListTasksStatusTimestampAfterInclusive(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, parkingAgent)
	ctx := localCtx(t)
	for i := range 2 {
		if _, err := send(ctx, r, fmt.Sprint("since-", i), "", fmt.Sprint("park ", i)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := r.ListTasks(ctx, &a2a.ListTasksParams{PageSize: 10})
	if err != nil || len(all.Tasks) != 2 {
		t.Fatalf("ListTasks = %+v, %v", all, err)
	}
	newest := all.Tasks[0]
	got, err := r.ListTasks(ctx, &a2a.ListTasksParams{PageSize: 10, StatusTimestampAfter: newest.Status.Timestamp})
	if err != nil || !slices.Equal(taskIDs(got.Tasks), []string{newest.ID}) || got.TotalSize != 1 {
		t.Errorf("ListTasks(statusTimestampAfter = the newest task's) = %v (total %d), %v; want that task", taskIDs(got.Tasks), got.TotalSize, err)
	}
}
