package turn

import (
	"context"
	"errors"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// TestNoCallerRefused (issue 36 item 4): a request that reaches the Runner without a
// caller (no WithPeer: a transport wired without peer identification) is refused by
// every entry point with an internal error, never served as the peer "local": it stores
// nothing and reads nothing of local's, though local has a task with a push config.
func TestNoCallerRefused(t *testing.T) {
	t.Parallel()
	r, st := newRunnerWith(t, Config{PushGuard: testGuard{}}, locking.NewLocal(), agent.Echo{})
	res, err := r.SendMessage(localCtx(t), &a2a.SendParams{Message: a2a.Message{MessageID: "m1", ContextID: "mine",
		Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task.ID
	if _, err := r.SetTaskPushConfig(localCtx(t), &a2a.TaskPushConfig{TaskID: task, Config: a2a.PushConfig{ID: "c1", URL: "https://hooks.example.com/a"}}); err != nil {
		t.Fatal(err)
	}
	before, err := st.Conversation(t.Context(), "local", "mine")
	if err != nil {
		t.Fatal(err)
	}
	send := &a2a.SendParams{Message: a2a.Message{MessageID: "m2", ContextID: "mine", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("again")}}}
	ref := &a2a.PushConfigRef{TaskID: task, ConfigID: "c1"}
	calls := map[string]func(ctx context.Context) error{
		"SendMessage":          func(ctx context.Context) error { _, err := r.SendMessage(ctx, send); return err },
		"SendStreamingMessage": func(ctx context.Context) error { _, err := r.SendStreamingMessage(ctx, send); return err },
		"GetTask":              func(ctx context.Context) error { _, err := r.GetTask(ctx, &a2a.GetTaskParams{ID: task}); return err },
		"ListTasks":            func(ctx context.Context) error { _, err := r.ListTasks(ctx, &a2a.ListTasksParams{}); return err },
		"CancelTask":           func(ctx context.Context) error { _, err := r.CancelTask(ctx, &a2a.TaskIDParams{ID: task}); return err },
		"SubscribeToTask": func(ctx context.Context) error {
			_, err := r.SubscribeToTask(ctx, &a2a.SubscribeParams{ID: task})
			return err
		},
		"SubscribeContext": func(ctx context.Context) error { _, err := r.SubscribeContext(ctx, "mine", 0); return err },
		"SetTaskPushConfig": func(ctx context.Context) error {
			_, err := r.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{TaskID: task, Config: a2a.PushConfig{URL: "https://hooks.example.com/b"}})
			return err
		},
		"GetTaskPushConfig":    func(ctx context.Context) error { _, err := r.GetTaskPushConfig(ctx, ref); return err },
		"ListTaskPushConfigs":  func(ctx context.Context) error { _, err := r.ListTaskPushConfigs(ctx, ref); return err },
		"DeleteTaskPushConfig": func(ctx context.Context) error { return r.DeleteTaskPushConfig(ctx, ref) },
	}
	for name, call := range calls {
		for _, ctx := range []context.Context{t.Context(), WithPeer(t.Context(), "")} {
			err := call(ctx)
			if !errors.Is(err, a2a.ErrInternal) || a2a.CodeOf(err) != -32603 {
				t.Errorf("%s without a caller: error %v (code %d), want an internal error (-32603)", name, err, a2a.CodeOf(err))
			}
		}
	}
	if n := r.Streams(); n != 0 {
		t.Errorf("%d streams open after refused subscriptions, want 0", n)
	}
	after, err := st.Conversation(t.Context(), "local", "mine")
	if err != nil || after.LastSeq != before.LastSeq {
		t.Errorf("local's conversation moved from seq %d to %d (%v): a request without a caller stored something", before.LastSeq, after.LastSeq, err)
	}
	if cs, _ := st.PushConfigs(t.Context(), "local", task); len(cs) != 1 {
		t.Errorf("local's task has %d push configs, want its 1 untouched", len(cs))
	}
	if convs, _ := st.List(t.Context(), ledger.ListOptions{}); len(convs) != 1 {
		t.Errorf("%d conversations, want local's alone", len(convs))
	}
}
