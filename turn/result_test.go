package turn

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/contextid"
)

// resultAgent replies text and returns res; a "park" message parks the task instead.
func resultAgent(text string, res agent.Result) agent.Agent {
	return funcAgent(func(_ context.Context, tu agent.Turn, emit agent.Emit) (agent.Result, error) {
		if tu.Text == "park" {
			return agent.Result{InputRequired: true}, emit("more?")
		}
		if text != "" {
			if err := emit(text); err != nil {
				return agent.Result{}, err
			}
		}
		return res, nil
	})
}

// bothDialects encodes res in each dialect and decodes it back, as a client would.
func bothDialects(t *testing.T, res a2a.SendResult) map[string]a2a.SendResult {
	t.Helper()
	out := map[string]a2a.SendResult{}
	for name, d := range map[string]a2a.Dialect{"v0.3": a2a.V03, "v1.0": a2a.V1} {
		b, err := a2a.EncodeSendResult(res, d)
		if err != nil {
			t.Fatalf("%s: EncodeSendResult() error = %v", name, err)
		}
		got, err := a2a.DecodeSendResult(b)
		if err != nil {
			t.Fatalf("%s: DecodeSendResult(%s) error = %v", name, b, err)
		}
		out[name] = got
	}
	return out
}

func TestMessageResult(t *testing.T) {
	t.Parallel()
	r, st := newRunner(t, resultAgent("Direct message response", agent.Result{Message: true}))
	ctx := localCtx(t)

	res, err := send(ctx, r, "c-msg", "", "hi")
	if err != nil {
		t.Fatalf("send error = %v", err)
	}
	if res.Task != nil || res.Message == nil {
		t.Fatalf("send result = task %+v, message %+v; want a Message only", res.Task, res.Message)
	}
	want := a2a.Message{ContextID: "c-msg", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("Direct message response")}}
	for name, got := range bothDialects(t, res) {
		if got.Task != nil || got.Message == nil {
			t.Fatalf("%s: decoded result is not a Message: %+v", name, got)
		}
		if diff := cmp.Diff(want, *got.Message, cmpopts.IgnoreFields(a2a.Message{}, "MessageID")); diff != "" {
			t.Errorf("%s: Message (-want +got):\n%s", name, diff)
		}
	}

	// Stored: the turn is a COMPLETED task with the Message in its history, no artifact.
	entries, err := st.Range(ctx, contextid.LocalOwner, "c-msg", 0, 100)
	if err != nil || len(entries) == 0 {
		t.Fatalf("Range() = %d entries, %v", len(entries), err)
	}
	task, err := r.GetTask(ctx, &a2a.GetTaskParams{ID: entries[0].TaskID})
	if err != nil {
		t.Fatalf("GetTask() error = %v", err)
	}
	if task.Status.State != a2a.StateCompleted || len(task.Artifacts) != 0 || len(task.History) != 2 ||
		task.History[1].MessageID != res.Message.MessageID {
		t.Fatalf("stored task = %s, %d artifacts, history %+v; want completed, none, the reply last", task.Status.State, len(task.Artifacts), task.History)
	}
}

func TestMessageResultContinuingATaskNamesIt(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, resultAgent("done", agent.Result{Message: true}))
	first, err := send(localCtx(t), r, "c-cont", "", "park")
	if err != nil || first.Task == nil || first.Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("first send = %+v, %v; want a task parked on input-required", first, err)
	}
	res, err := send(localCtx(t), r, "", first.Task.ID, "go on")
	if err != nil || res.Message == nil {
		t.Fatalf("follow-up = %+v, %v; want a Message", res, err)
	}
	if res.Message.TaskID != first.Task.ID || res.Message.Text() != "done" {
		t.Fatalf("follow-up Message = %+v; want the task's id and the reply", res.Message)
	}
}

func TestMessageResultStreamsAsMessageEvent(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, resultAgent("hello", agent.Result{Message: true}))
	s, err := r.SendStreamingMessage(localCtx(t), &a2a.SendParams{Message: a2a.Message{
		MessageID: "m1", ContextID: "c-smsg", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}})
	if err != nil {
		t.Fatalf("SendStreamingMessage() error = %v", err)
	}
	defer s.Close()
	evs := readAll(t, s, nil)
	var msgs []a2a.Message
	for _, ev := range evs {
		if ev.Message != nil {
			msgs = append(msgs, *ev.Message)
		}
	}
	if len(msgs) != 1 || msgs[0].Text() != "hello" {
		t.Fatalf("stream Messages = %+v; want one, the reply", msgs)
	}
	if last := evs[len(evs)-1]; last.Status == nil || last.Status.Status.State != a2a.StateCompleted {
		t.Fatalf("last event = %+v; want the completed status", last)
	}
}

// fileAndDataParts are a reply's non-text parts: a file by bytes, a file by URL, data.
func fileAndDataParts() []a2a.Part {
	return []a2a.Part{
		{Kind: a2a.PartFile, Raw: []byte("tck"), MediaType: "text/plain", Filename: "output.txt"},
		{Kind: a2a.PartFile, URL: "https://example.com/output.txt", MediaType: "text/plain", Filename: "output.txt"},
		{Kind: a2a.PartData, Data: json.RawMessage(`{"count":42,"key":"value"}`)},
	}
}

func TestFileAndDataPartsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       []a2a.Part
	}{
		{"parts only", "", fileAndDataParts()},
		{"text and parts", "see attached", append([]a2a.Part{a2a.TextPart("see attached")}, fileAndDataParts()...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRunner(t, resultAgent(tc.text, agent.Result{Parts: fileAndDataParts()}))
			res, err := send(localCtx(t), r, "c-parts", "", "hi")
			if err != nil || res.Task == nil {
				t.Fatalf("send = %+v, %v", res, err)
			}
			stored, err := r.GetTask(localCtx(t), &a2a.GetTaskParams{ID: res.Task.ID})
			if err != nil {
				t.Fatalf("GetTask() error = %v", err)
			}
			results := bothDialects(t, a2a.SendResult{Task: stored})
			results["send"] = res
			for name, got := range results {
				if len(got.Task.Artifacts) != 1 {
					t.Fatalf("%s: %d artifacts, want 1", name, len(got.Task.Artifacts))
				}
				if diff := cmp.Diff(tc.want, got.Task.Artifacts[0].Parts, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s: artifact parts (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestFileAndDataPartsStream(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "chunked text"} {
		t.Run(text, func(t *testing.T) {
			t.Parallel()
			r, _ := newRunner(t, resultAgent(text, agent.Result{Parts: fileAndDataParts()}))
			s, err := r.SendStreamingMessage(localCtx(t), &a2a.SendParams{Message: a2a.Message{
				MessageID: "m1", ContextID: "c-sparts", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}})
			if err != nil {
				t.Fatalf("SendStreamingMessage() error = %v", err)
			}
			defer s.Close()
			var got []a2a.Part
			for _, ev := range readAll(t, s, nil) {
				if ev.Artifact != nil {
					for _, p := range ev.Artifact.Artifact.Parts {
						if p.Kind != a2a.PartText {
							got = append(got, p)
						}
					}
				}
			}
			if diff := cmp.Diff(fileAndDataParts(), got); diff != "" {
				t.Errorf("streamed non-text parts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRejectedFoldsAsRejected(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, resultAgent("rejected", agent.Result{Rejected: true}))
	res, err := send(localCtx(t), r, "c-rej", "", "do it")
	if err != nil || res.Task == nil {
		t.Fatalf("send = %+v, %v", res, err)
	}
	stored, err := r.GetTask(localCtx(t), &a2a.GetTaskParams{ID: res.Task.ID})
	if err != nil {
		t.Fatalf("GetTask() error = %v", err)
	}
	for name, task := range map[string]*a2a.Task{"send": res.Task, "GetTask": stored} {
		if task.Status.State != a2a.StateRejected || task.Status.Message == nil || task.Status.Message.Text() != "rejected" {
			t.Errorf("%s: status = %+v; want rejected, saying so", name, task.Status)
		}
	}
	if _, err := send(localCtx(t), r, "", res.Task.ID, "again"); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Fatalf("follow-up to a rejected task error = %v, want ErrUnsupportedOperation", err)
	}
}

func TestSubscribeFollowsParkedTaskToTheEnd(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, resultAgent("finished", agent.Result{}))
	first, err := send(localCtx(t), r, "c-sub", "", "park")
	if err != nil || first.Task == nil || first.Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("first send = %+v, %v; want a parked task", first, err)
	}
	s, err := r.SubscribeToTask(localCtx(t), &a2a.SubscribeParams{ID: first.Task.ID})
	if err != nil {
		t.Fatalf("SubscribeToTask() error = %v", err)
	}
	defer s.Close()
	head := readN(t, s, 1)
	if head[0].Task == nil || head[0].Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("first event = %+v; want the parked task's snapshot", head[0])
	}
	if _, err := send(localCtx(t), r, "", first.Task.ID, "go on"); err != nil {
		t.Fatalf("follow-up error = %v", err)
	}
	evs := readAll(t, s, nil)
	if len(evs) == 0 {
		t.Fatal("the stream ended after the snapshot; want the next turn's events")
	}
	if last := evs[len(evs)-1]; last.Status == nil || last.Status.Status.State != a2a.StateCompleted {
		t.Fatalf("last event = %+v; want the completed status", last)
	}
	if got := replyText(t, evs); got != "finished" {
		t.Fatalf("streamed reply = %q, want %q", got, "finished")
	}
}

func TestSubscribeToParkedTaskEndsWhenCanceled(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, resultAgent("unused", agent.Result{}))
	first, err := send(localCtx(t), r, "c-subcancel", "", "park")
	if err != nil || first.Task == nil || first.Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("first send = %+v, %v; want a parked task", first, err)
	}
	s, err := r.SubscribeToTask(localCtx(t), &a2a.SubscribeParams{ID: first.Task.ID})
	if err != nil {
		t.Fatalf("SubscribeToTask() error = %v", err)
	}
	defer s.Close()
	readN(t, s, 1) // the snapshot
	if _, err := r.CancelTask(localCtx(t), &a2a.TaskIDParams{ID: first.Task.ID}); err != nil {
		t.Fatalf("CancelTask() error = %v", err)
	}
	evs := readAll(t, s, nil)
	if len(evs) == 0 || evs[len(evs)-1].Status == nil || evs[len(evs)-1].Status.Status.State != a2a.StateCanceled {
		t.Fatalf("events after the cancel = %+v; want the stream to end with the canceled status", evs)
	}
}

func TestMessageWithAStateIsATask(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res  agent.Result
		want a2a.TaskState
	}{
		{agent.Result{Message: true, InputRequired: true}, a2a.StateInputRequired},
		{agent.Result{Message: true, Rejected: true}, a2a.StateRejected},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			t.Parallel()
			r, _ := newRunner(t, resultAgent("text", tc.res))
			res, err := send(localCtx(t), r, "c-state", "", "hi")
			if err != nil || res.Task == nil || res.Message != nil {
				t.Fatalf("send = %+v, %v; want a task", res, err)
			}
			if res.Task.Status.State != tc.want || len(res.Task.Artifacts) != 1 {
				t.Fatalf("task = %s with %d artifacts; want %s with the reply", res.Task.Status.State, len(res.Task.Artifacts), tc.want)
			}
		})
	}
}
