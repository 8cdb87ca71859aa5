package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
	"github.com/google/go-cmp/cmp"
)

const relayToken = "relay-tok-5ecret-0123456789"

// relayUpstream is an in-test upstream A2A agent: a2a.NewJSONRPCHandler over a fake
// Handler whose streams are scripted per test, plus the union agent card.
type relayUpstream struct {
	*httptest.Server
	// script returns the stream for the n-th send (0-based); nil: an error stream.
	script func(n int, p *a2a.SendParams) (a2a.Stream, error)

	// cancelErr, if set, is CancelTask's answer.
	cancelErr error
	// subscribe, if set, answers SubscribeToTask (else UnsupportedOperation).
	subscribe func(p *a2a.SubscribeParams) (a2a.Stream, error)
	// intercept, if set, sees each JSON-RPC request (its body) first; true: it answered.
	intercept func(w http.ResponseWriter, method string, id json.RawMessage) bool

	mu         sync.Mutex
	subscribed []a2a.SubscribeParams
	sent       []*a2a.SendParams
	canceled   []string
	auth       []string
	versions   []string
	parents    []string // each request's traceparent
}

func newRelayUpstream(t *testing.T, script func(n int, p *a2a.SendParams) (a2a.Stream, error)) *relayUpstream {
	t.Helper()
	u := &relayUpstream{script: script}
	rpc := a2a.NewJSONRPCHandler(u, a2a.TransportConfig{Logger: slog.New(slog.DiscardHandler), KeepAlive: 20 * time.Millisecond})
	mux := http.NewServeMux()
	mux.Handle(a2a.CardPath, a2a.NewCardHandler(a2a.CardConfig{}))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.auth = append(u.auth, r.Header.Get("Authorization"))
		u.versions = append(u.versions, r.Header.Get("A2A-Version"))
		u.parents = append(u.parents, r.Header.Get("traceparent"))
		u.mu.Unlock()
		if u.intercept != nil {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if req, err := a2a.DecodeRequest(body); err == nil && u.intercept(w, req.Method, req.ID) {
				return
			}
		}
		rpc.ServeHTTP(w, r)
	}))
	u.Server = httptest.NewServer(mux)
	t.Cleanup(u.Close)
	return u
}

func (u *relayUpstream) SendStreamingMessage(_ context.Context, p *a2a.SendParams) (a2a.Stream, error) {
	u.mu.Lock()
	n := len(u.sent)
	u.sent = append(u.sent, p)
	u.mu.Unlock()
	return u.script(n, p)
}

func (u *relayUpstream) CancelTask(_ context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	u.mu.Lock()
	u.canceled = append(u.canceled, p.ID)
	u.mu.Unlock()
	if u.cancelErr != nil {
		return nil, u.cancelErr
	}
	return &a2a.Task{ID: p.ID, ContextID: "up-ctx", Status: a2a.TaskStatus{State: a2a.StateCanceled}}, nil
}

func (u *relayUpstream) SendMessage(context.Context, *a2a.SendParams) (a2a.SendResult, error) {
	return a2a.SendResult{}, a2a.ErrUnsupportedOperation
}

func (u *relayUpstream) GetTask(context.Context, *a2a.GetTaskParams) (*a2a.Task, error) {
	return nil, a2a.ErrTaskNotFound
}

func (u *relayUpstream) ListTasks(context.Context, *a2a.ListTasksParams) (*a2a.ListTasksResult, error) {
	return nil, a2a.ErrUnsupportedOperation
}

func (u *relayUpstream) SubscribeToTask(_ context.Context, p *a2a.SubscribeParams) (a2a.Stream, error) {
	u.mu.Lock()
	u.subscribed = append(u.subscribed, *p)
	u.mu.Unlock()
	if u.subscribe == nil {
		return nil, a2a.ErrUnsupportedOperation
	}
	return u.subscribe(p)
}

func (u *relayUpstream) sentParams() []*a2a.SendParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*a2a.SendParams(nil), u.sent...)
}

func (u *relayUpstream) canceledTasks() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.canceled...)
}

// relayStream yields its events, then err (io.EOF when nil), or with hang set blocks
// until its ctx is done.
type relayStream struct {
	events []a2a.Event
	err    error
	hang   bool
	i      int
}

func (s *relayStream) Next(ctx context.Context) (a2a.Event, error) {
	if s.i < len(s.events) {
		s.i++
		return s.events[s.i-1], nil
	}
	if s.hang {
		<-ctx.Done()
		return a2a.Event{}, ctx.Err()
	}
	if s.err != nil {
		return a2a.Event{}, s.err
	}
	return a2a.Event{}, io.EOF
}

func (s *relayStream) Close() {}

func stream(events ...a2a.Event) func(int, *a2a.SendParams) (a2a.Stream, error) {
	return func(int, *a2a.SendParams) (a2a.Stream, error) { return &relayStream{events: events}, nil }
}

// Event builders for an upstream task "up-task" in context "up-ctx".
func upTask(state a2a.TaskState) a2a.Event {
	return a2a.Event{Task: &a2a.Task{ID: "up-task", ContextID: "up-ctx", Status: a2a.TaskStatus{State: state}}}
}

func upStatus(state a2a.TaskState, text string) a2a.Event {
	st := &a2a.StatusUpdate{TaskID: "up-task", ContextID: "up-ctx", Status: a2a.TaskStatus{State: state}, Final: state.EndsStream()}
	if text != "" {
		st.Status.Message = &a2a.Message{MessageID: "s", ContextID: "up-ctx", TaskID: "up-task", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
	}
	return a2a.Event{Status: st}
}

func upChunk(artifactID, text string, appended bool) a2a.Event {
	return a2a.Event{Artifact: &a2a.ArtifactUpdate{TaskID: "up-task", ContextID: "up-ctx", Append: appended,
		Artifact: a2a.Artifact{ArtifactID: artifactID, Parts: []a2a.Part{a2a.TextPart(text)}}}}
}

func newTestRelay(t *testing.T, cfg A2ARelayConfig) (*A2ARelay, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	r, err := NewA2ARelay(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("NewA2ARelay() error = %v, want nil", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r, logs
}

// relayReply runs one turn and returns the emitted chunks.
func relayReply(ctx context.Context, r *A2ARelay, turn Turn) ([]string, Result, error) {
	var got []string
	res, err := r.Reply(ctx, turn, func(c string) error {
		got = append(got, c)
		return nil
	})
	return got, res, err
}

func TestA2ARelayStreamsAndContinues(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"", "auto", "1.0", "0.3"} {
		t.Run("dialect "+dialect, func(t *testing.T) {
			t.Parallel()
			up := newRelayUpstream(t, func(n int, p *a2a.SendParams) (a2a.Stream, error) {
				ctxID := p.Message.ContextID
				if ctxID == "" {
					ctxID = "up-ctx-1" // the upstream makes one
				}
				task := &a2a.Task{ID: "up-task-" + string(rune('a'+n)), ContextID: ctxID, Status: a2a.TaskStatus{State: a2a.StateSubmitted}}
				chunk := func(text string, appended bool) a2a.Event {
					return a2a.Event{Artifact: &a2a.ArtifactUpdate{TaskID: task.ID, ContextID: ctxID, Append: appended,
						Artifact: a2a.Artifact{ArtifactID: "reply", Parts: []a2a.Part{a2a.TextPart(text)}}}}
				}
				return &relayStream{events: []a2a.Event{
					{Seq: 1, Task: task},
					{Seq: 2, Status: &a2a.StatusUpdate{TaskID: task.ID, ContextID: ctxID, Status: a2a.TaskStatus{State: a2a.StateWorking,
						Message: &a2a.Message{MessageID: "p", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("thinking…")}}}}},
					chunk("Hel", false),
					chunk("lo, ", true),
					chunk("wörld 🎉", true),
					{Seq: 6, Status: &a2a.StatusUpdate{TaskID: task.ID, ContextID: ctxID, Status: a2a.TaskStatus{State: a2a.StateCompleted}, Final: true}},
				}}, nil
			})
			r, _ := newTestRelay(t, A2ARelayConfig{URL: up.URL, Token: relayToken, Dialect: dialect})

			got, res, err := relayReply(t.Context(), r, Turn{ContextID: "c-local", TaskID: "t-local", Text: "hi", Prompt: "PROMPT: hi"})
			if err != nil {
				t.Fatalf("Reply() error = %v, want nil", err)
			}
			if diff := cmp.Diff([]string{"Hel", "lo, ", "wörld 🎉"}, got); diff != "" {
				t.Errorf("emitted chunks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(Result{UpstreamContextID: "up-ctx-1"}, res); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}

			// The next turn continues the upstream context.
			got, res, err = relayReply(t.Context(), r, Turn{Text: "again", UpstreamContextID: res.UpstreamContextID})
			if err != nil || strings.Join(got, "") != "Hello, wörld 🎉" || res.UpstreamContextID != "up-ctx-1" {
				t.Fatalf("second Reply() = %q, %+v, %v; want the reply in up-ctx-1", got, res, err)
			}

			sent := up.sentParams()
			if len(sent) != 2 {
				t.Fatalf("upstream got %d sends, want 2", len(sent))
			}
			for i, wantText := range []string{"hi", "again"} {
				m := sent[i].Message
				if m.Role != a2a.RoleUser || len(m.Parts) != 1 || m.Parts[0].Kind != a2a.PartText || m.Parts[0].Text != wantText || m.TaskID != "" {
					t.Errorf("send %d message = %+v, want one user text part %q and no taskId", i, m, wantText)
				}
				if len(m.MessageID) != 36 {
					t.Errorf("send %d messageId = %q, want a UUID", i, m.MessageID)
				}
			}
			if sent[0].Message.ContextID != "" {
				t.Errorf("first send contextId = %q, want none (the upstream makes one)", sent[0].Message.ContextID)
			}
			if sent[1].Message.ContextID != "up-ctx-1" {
				t.Errorf("second send contextId = %q, want the one returned first, up-ctx-1", sent[1].Message.ContextID)
			}
			if sent[0].Message.MessageID == sent[1].Message.MessageID {
				t.Errorf("both sends have messageId %q, want fresh ones", sent[0].Message.MessageID)
			}
			up.mu.Lock()
			defer up.mu.Unlock()
			for i, a := range up.auth {
				if a != "Bearer "+relayToken {
					t.Errorf("request %d Authorization = %q, want the bearer token", i, a)
				}
				wantVersion := "1.0"
				if dialect == "0.3" {
					wantVersion = ""
				}
				if up.versions[i] != wantVersion {
					t.Errorf("request %d A2A-Version = %q, want %q", i, up.versions[i], wantVersion)
				}
			}
		})
	}
}

// An upstream task that asks for input is continued by the next turn: its message
// carries the task's id, and the task id is handed back only while the task waits.
func TestA2ARelayContinuesInputRequiredTask(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"1.0", "0.3"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			up := newRelayUpstream(t, func(n int, p *a2a.SendParams) (a2a.Stream, error) {
				if n == 1 && p.Message.TaskID != "up-task" {
					return nil, a2a.Errorf(a2a.ErrInvalidParams, "want the input-required task continued, got taskId %q", p.Message.TaskID)
				}
				if n == 0 {
					return &relayStream{events: []a2a.Event{upTask(a2a.StateSubmitted), upStatus(a2a.StateInputRequired, "Which city?")}}, nil
				}
				return &relayStream{events: []a2a.Event{upStatus(a2a.StateWorking, ""), upChunk("a", "Sunny in Paris", false), upStatus(a2a.StateCompleted, "")}}, nil
			})
			r, _ := newTestRelay(t, A2ARelayConfig{URL: up.URL, Dialect: dialect})
			got, res, err := relayReply(t.Context(), r, Turn{Text: "weather?"})
			if err != nil || strings.Join(got, "") != "Which city?" {
				t.Fatalf("first Reply() = %q, %v; want the question", got, err)
			}
			if diff := cmp.Diff(Result{InputRequired: true, UpstreamContextID: "up-ctx", UpstreamTaskID: "up-task"}, res); diff != "" {
				t.Fatalf("first Result (-want +got):\n%s", diff)
			}
			got, res, err = relayReply(t.Context(), r, Turn{Text: "Paris", UpstreamContextID: res.UpstreamContextID, UpstreamTaskID: res.UpstreamTaskID})
			if err != nil || strings.Join(got, "") != "Sunny in Paris" {
				t.Fatalf("second Reply() = %q, %v; want the answer", got, err)
			}
			if diff := cmp.Diff(Result{UpstreamContextID: "up-ctx"}, res); diff != "" {
				t.Errorf("second Result (-want +got):\n%s (a completed task is not continued)", diff)
			}
			if sent := up.sentParams(); len(sent) != 2 || sent[0].Message.TaskID != "" || sent[1].Message.ContextID != "up-ctx" {
				t.Errorf("upstream sends = %d, first taskId %q; want 2, the first with no taskId, the second in up-ctx", len(sent), sent[0].Message.TaskID)
			}
		})
	}
}

// An upstream task that asked for input but can no longer continue (gone, or ended) is
// not an error: the message goes again as a new task in the same context.
func TestA2ARelayInputRequiredTaskGone(t *testing.T) {
	t.Parallel()
	for name, refusal := range map[string]error{
		"task not found":      a2a.ErrTaskNotFound,
		"task ended (-32004)": a2a.Errorf(a2a.ErrUnsupportedOperation, "task up-old is completed"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			up := newRelayUpstream(t, func(n int, p *a2a.SendParams) (a2a.Stream, error) {
				if p.Message.TaskID != "" {
					return nil, refusal
				}
				return &relayStream{events: []a2a.Event{upTask(a2a.StateSubmitted), upChunk("a", "fresh", false), upStatus(a2a.StateCompleted, "")}}, nil
			})
			r, logs := newTestRelay(t, A2ARelayConfig{URL: up.URL})
			got, res, err := relayReply(t.Context(), r, Turn{Text: "Paris", UpstreamContextID: "up-ctx", UpstreamTaskID: "up-old"})
			if err != nil || strings.Join(got, "") != "fresh" || res.UpstreamTaskID != "" {
				t.Fatalf("Reply() = %q, %+v, %v; want the new task's reply", got, res, err)
			}
			sent := up.sentParams()
			if len(sent) != 2 || sent[0].Message.TaskID != "up-old" || sent[1].Message.TaskID != "" || sent[1].Message.ContextID != "up-ctx" ||
				sent[0].Message.MessageID == sent[1].Message.MessageID {
				t.Fatalf("upstream sends = %+v; want up-old refused, then a new messageId with no taskId in up-ctx", sent)
			}
			if !strings.Contains(logs.String(), "cannot continue") {
				t.Errorf("no log line about the task that cannot continue: %s", logs)
			}
		})
	}
}

// CancelUpstream cancels the upstream task; one the upstream no longer has or cannot
// cancel any more is not an error, an upstream that fails is.
func TestA2ARelayCancelUpstream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		cancelErr error
		wantErr   bool
	}{
		{name: "canceled"},
		{name: "task not found", cancelErr: a2a.ErrTaskNotFound},
		{name: "task ended", cancelErr: a2a.ErrTaskNotCancelable},
		{name: "upstream fails", cancelErr: a2a.ErrUnavailable, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newRelayUpstream(t, stream())
			up.cancelErr = tc.cancelErr
			r, logs := newTestRelay(t, A2ARelayConfig{URL: up.URL, Token: relayToken})
			err := r.CancelUpstream(t.Context(), "up-waiting")
			if (err != nil) != tc.wantErr || tc.wantErr && !errors.Is(err, ErrBackend) {
				t.Fatalf("CancelUpstream() error = %v, want error %v (wrapping ErrBackend)", err, tc.wantErr)
			}
			if diff := cmp.Diff([]string{"up-waiting"}, up.canceledTasks()); diff != "" {
				t.Errorf("upstream tasks canceled (-want +got):\n%s", diff)
			}
			if strings.Contains(logs.String(), relayToken) {
				t.Errorf("the log contains the token: %s", logs)
			}
		})
	}
}

func TestA2ARelayInputPrompt(t *testing.T) {
	t.Parallel()
	up := newRelayUpstream(t, stream(upTask(a2a.StateSubmitted), upChunk("a", "ok", false), upStatus(a2a.StateCompleted, "")))
	r, _ := newTestRelay(t, A2ARelayConfig{URL: up.URL, Dialect: "1.0", Input: "prompt"})
	for _, turn := range []Turn{{Text: "hi", Prompt: "PRIOR\nhi"}, {Text: "no prompt"}} {
		if _, _, err := relayReply(t.Context(), r, turn); err != nil {
			t.Fatalf("Reply() error = %v", err)
		}
	}
	sent := up.sentParams()
	if got := sent[0].Message.Text(); got != "PRIOR\nhi" {
		t.Errorf("sent text = %q, want the prompt", got)
	}
	if got := sent[1].Message.Text(); got != "no prompt" {
		t.Errorf("sent text without a prompt = %q, want the text", got)
	}
}

func TestA2ARelayOutcomes(t *testing.T) {
	t.Parallel()
	message := a2a.Event{Message: &a2a.Message{MessageID: "r", ContextID: "msg-ctx", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("a direct answer")}}}
	snapshot := upTask(a2a.StateWorking)
	snapshot.Task.Artifacts = []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("Hello world")}}}
	tests := []struct {
		name          string
		events        []a2a.Event
		streamErr     error // the upstream stream's error after the events
		openErr       error // the upstream refuses the stream
		want          []string
		wantInput     bool
		wantErr       bool
		wantCtx       string
		wantCancelled bool // the relay canceled the upstream task
	}{
		{name: "completed", events: []a2a.Event{upTask(a2a.StateSubmitted), upChunk("a", "done", false), upStatus(a2a.StateCompleted, "")},
			want: []string{"done"}, wantCtx: "up-ctx"},
		{name: "input required after chunks", events: []a2a.Event{upTask(a2a.StateSubmitted), upChunk("a", "Which ", false), upChunk("a", "city?", true), upStatus(a2a.StateInputRequired, "Which city?")},
			want: []string{"Which ", "city?"}, wantInput: true, wantCtx: "up-ctx"},
		{name: "input required in the status message", events: []a2a.Event{upTask(a2a.StateSubmitted), upStatus(a2a.StateWorking, "looking"), upStatus(a2a.StateInputRequired, "Which city?")},
			want: []string{"Which city?"}, wantInput: true, wantCtx: "up-ctx"},
		{name: "completed in the status message", events: []a2a.Event{upTask(a2a.StateSubmitted), upStatus(a2a.StateCompleted, "all done")},
			want: []string{"all done"}, wantCtx: "up-ctx"},
		{name: "message answer", events: []a2a.Event{message}, want: []string{"a direct answer"}, wantCtx: "msg-ctx"},
		{name: "an artifact per chunk", events: []a2a.Event{upTask(a2a.StateSubmitted), upChunk("a1", "one ", false), upChunk("a2", "two ", false), upChunk("a3", "three", false), upStatus(a2a.StateCompleted, "")},
			want: []string{"one ", "two ", "three"}, wantCtx: "up-ctx"},
		{name: "snapshot re-sends relayed text", events: []a2a.Event{upTask(a2a.StateSubmitted), upChunk("a", "Hel", false), upChunk("a", "lo", true), snapshot, upStatus(a2a.StateCompleted, "Hello world")},
			want: []string{"Hel", "lo", " world"}, wantCtx: "up-ctx"},
		{name: "replaced text is not taken back", events: []a2a.Event{upTask(a2a.StateSubmitted), upChunk("a", "draft", false), upChunk("a", "final", false), upChunk("a", "!", true), upStatus(a2a.StateCompleted, "")},
			want: []string{"draft", "!"}, wantCtx: "up-ctx"},
		{name: "failed", events: []a2a.Event{upTask(a2a.StateSubmitted), upChunk("a", "part", false), upStatus(a2a.StateFailed, "boom")},
			want: []string{"part"}, wantErr: true, wantCtx: "up-ctx"},
		{name: "rejected", events: []a2a.Event{upTask(a2a.StateSubmitted), upStatus(a2a.StateRejected, "no")}, wantErr: true, wantCtx: "up-ctx"},
		{name: "canceled", events: []a2a.Event{upTask(a2a.StateSubmitted), upStatus(a2a.StateCanceled, "")}, wantErr: true, wantCtx: "up-ctx"},
		{name: "auth required", events: []a2a.Event{upTask(a2a.StateSubmitted), upStatus(a2a.StateAuthRequired, "log in"), upStatus(a2a.StateAuthRequired, "")},
			wantErr: true, wantCtx: "up-ctx"},
		{name: "stream ends while working", events: []a2a.Event{upTask(a2a.StateSubmitted), upChunk("a", "par", false)},
			want: []string{"par"}, wantErr: true, wantCtx: "up-ctx", wantCancelled: true},
		{name: "error mid-stream", events: []a2a.Event{upTask(a2a.StateWorking), upChunk("a", "par", false)}, streamErr: a2a.ErrUnavailable,
			want: []string{"par"}, wantErr: true, wantCtx: "up-ctx", wantCancelled: true},
		{name: "context busy", openErr: &a2a.Error{Err: a2a.ErrContextBusy, Metadata: map[string]string{"contextId": "up-ctx"}}, wantErr: true, wantCtx: "prev-ctx"},
		{name: "task not found", openErr: a2a.ErrTaskNotFound, wantErr: true, wantCtx: "prev-ctx"},
	}
	for _, dialect := range []string{"1.0", "0.3"} {
		for _, tc := range tests {
			t.Run(dialect+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				up := newRelayUpstream(t, func(int, *a2a.SendParams) (a2a.Stream, error) {
					if tc.openErr != nil {
						return nil, tc.openErr
					}
					return &relayStream{events: tc.events, err: tc.streamErr}, nil
				})
				r, logs := newTestRelay(t, A2ARelayConfig{URL: up.URL, Token: relayToken, Dialect: dialect})
				got, res, err := relayReply(t.Context(), r, Turn{Text: "q", UpstreamContextID: "prev-ctx"})
				if tc.wantErr {
					if !errors.Is(err, ErrBackend) {
						t.Fatalf("Reply() error = %v, want %v", err, ErrBackend)
					}
					if errors.Is(err, a2a.ErrContextBusy) || errors.Is(err, a2a.ErrTaskNotFound) || errors.Is(err, a2aclient.ErrTransport) {
						t.Errorf("Reply() error = %v: the upstream's protocol errors must not leak into the chain", err)
					}
					if !strings.Contains(logs.String(), "level=WARN") {
						t.Errorf("no Warn log for a failed turn: %s", logs)
					}
				} else if err != nil {
					t.Fatalf("Reply() error = %v, want nil", err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("emitted chunks (-want +got):\n%s", diff)
				}
				want := Result{InputRequired: tc.wantInput, UpstreamContextID: tc.wantCtx}
				if tc.wantInput {
					want.UpstreamTaskID = "up-task" // the next turn continues it
				}
				if diff := cmp.Diff(want, res); diff != "" {
					t.Errorf("Result (-want +got):\n%s", diff)
				}
				var wantCanceled []string
				if tc.wantCancelled {
					wantCanceled = []string{"up-task"}
				}
				if diff := cmp.Diff(wantCanceled, up.canceledTasks()); diff != "" {
					t.Errorf("upstream tasks canceled (-want +got):\n%s", diff)
				}
				if strings.Contains(logs.String(), relayToken) {
					t.Errorf("the log contains the token: %s", logs)
				}
			})
		}
	}
}

func TestA2ARelayUnreachable(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL + "/?key=" + relayToken
	closed.Close()
	for _, dialect := range []string{"auto", "1.0", "0.3"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			r, logs := newTestRelay(t, A2ARelayConfig{URL: url, Token: relayToken, Dialect: dialect})
			got, res, err := relayReply(t.Context(), r, Turn{Text: "hi", UpstreamContextID: "u"})
			if !errors.Is(err, ErrBackend) || len(got) != 0 || res.UpstreamContextID != "u" {
				t.Errorf("Reply() = %q, %+v, %v; want nothing emitted and %v", got, res, err, ErrBackend)
			}
			if strings.Contains(err.Error(), relayToken) || strings.Contains(logs.String(), relayToken) {
				t.Errorf("the token leaked: error %q, log %s", err, logs)
			}
			if !strings.Contains(logs.String(), "upstream call failed") {
				t.Errorf("log %s: want the failure at Warn", logs)
			}
		})
	}
}

func TestA2ARelayNotAnAgent(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	r, logs := newTestRelay(t, A2ARelayConfig{URL: srv.URL, Token: relayToken, Dialect: "1.0"})
	if _, _, err := relayReply(t.Context(), r, Turn{Text: "hi"}); !errors.Is(err, ErrBackend) {
		t.Errorf("Reply() error = %v, want %v", err, ErrBackend)
	}
	if !strings.Contains(logs.String(), "HTTP 401") {
		t.Errorf("log %s: want the HTTP status", logs)
	}
}

// TestA2ARelayAbandoned: the timeout, the caller's cancellation and an emit error end
// the turn and cancel the upstream task that still runs.
func TestA2ARelayAbandoned(t *testing.T) {
	t.Parallel()
	errStop := errors.New("stop")
	tests := []struct {
		name    string
		timeout time.Duration
		cancel  bool  // cancel the turn's ctx after the first chunk
		emitErr error // emit fails
		wantErr func(error) bool
	}{
		{name: "timeout", timeout: 150 * time.Millisecond, wantErr: func(err error) bool { return errors.Is(err, ErrBackend) && strings.Contains(err.Error(), "150ms") }},
		{name: "caller canceled", cancel: true, wantErr: func(err error) bool { return errors.Is(err, context.Canceled) && !errors.Is(err, ErrBackend) }},
		{name: "emit fails", emitErr: errStop, wantErr: func(err error) bool { return err == errStop }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newRelayUpstream(t, func(int, *a2a.SendParams) (a2a.Stream, error) {
				return &relayStream{events: []a2a.Event{upTask(a2a.StateWorking), upChunk("a", "first", false)}, hang: true}, nil
			})
			r, _ := newTestRelay(t, A2ARelayConfig{URL: up.URL, Dialect: "1.0", Timeout: tc.timeout})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			start := time.Now()
			res, err := r.Reply(ctx, Turn{Text: "hi"}, func(c string) error {
				if tc.cancel {
					cancel()
				}
				return tc.emitErr
			})
			if !tc.wantErr(err) {
				t.Errorf("Reply() error = %v, unexpected", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Reply() took %s", d)
			}
			if res.UpstreamContextID != "up-ctx" {
				t.Errorf("Result.UpstreamContextID = %q, want up-ctx", res.UpstreamContextID)
			}
			if diff := cmp.Diff([]string{"up-task"}, up.canceledTasks()); diff != "" {
				t.Errorf("upstream tasks canceled (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewA2ARelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  A2ARelayConfig
		ok   bool
	}{
		{"minimal", A2ARelayConfig{URL: "http://127.0.0.1:9901"}, true},
		{"all set", A2ARelayConfig{URL: "https://agent.example/a2a", Token: "t", Dialect: "0.3", Timeout: time.Minute, Input: "prompt"}, true},
		{"no URL", A2ARelayConfig{}, false},
		{"relative URL", A2ARelayConfig{URL: "/a2a"}, false},
		{"bad dialect", A2ARelayConfig{URL: "http://a.example", Dialect: "2.0"}, false},
		{"bad input", A2ARelayConfig{URL: "http://a.example", Input: "history"}, false},
		{"negative timeout", A2ARelayConfig{URL: "http://a.example", Timeout: -time.Second}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewA2ARelay(tc.cfg, nil)
			if (err == nil) != tc.ok {
				t.Fatalf("NewA2ARelay(%+v) error = %v, want ok %v", tc.cfg, err, tc.ok)
			}
			if err == nil {
				_ = r.Close()
			}
		})
	}
	var _ Agent = (*A2ARelay)(nil)
}

func TestA2ARelayConfigLogValue(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	slog.New(slog.NewTextHandler(logs, nil)).Info("config", "a2a", A2ARelayConfig{URL: "https://u:pw@agent.example/?k=" + relayToken, Token: relayToken})
	if out := logs.String(); strings.Contains(out, relayToken) || strings.Contains(out, "pw@") || !strings.Contains(out, "a2a.token_set=true") {
		t.Errorf("log %q: want the config without the token or password", out)
	}
}

// TestA2ARelayResumesABrokenStream: the upstream's stream breaks mid-reply (the
// connection is cut after two numbered events); the relay follows the task again with
// SubscribeToTask after the last event it relayed (Last-Event-ID 2), and the turn gets
// the whole reply, once, without canceling the upstream task.
func TestA2ARelayResumesABrokenStream(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"1.0", "0.3"} {
		t.Run("dialect "+dialect, func(t *testing.T) {
			t.Parallel()
			up := newRelayUpstream(t, nil)
			up.intercept = func(w http.ResponseWriter, method string, id json.RawMessage) bool {
				if method != "message/stream" && method != "SendStreamingMessage" {
					return false
				}
				d := a2a.V03
				if method == "SendStreamingMessage" {
					d = a2a.V1
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for _, ev := range []a2a.Event{upTask(a2a.StateWorking), upChunk("r", "hello ", false)} {
					ev.Seq = map[bool]uint64{true: 1, false: 2}[ev.Task != nil]
					res, err := a2a.EncodeEvent(&ev, d)
					if err != nil {
						t.Error(err)
						return true
					}
					fmt.Fprintf(w, "id: %d\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", ev.Seq, id, res)
				}
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // the connection breaks
			}
			up.subscribe = func(p *a2a.SubscribeParams) (a2a.Stream, error) {
				rest := []a2a.Event{upChunk("r", "world", true), upStatus(a2a.StateCompleted, "")}
				rest[0].Seq, rest[1].Seq = 3, 4
				if p.AfterSeq == 0 { // from the start: the replay a broken stream must not need
					rest = append([]a2a.Event{upChunk("r", "hello ", false)}, rest...)
				}
				return &relayStream{events: rest}, nil
			}
			r, logs := newTestRelay(t, A2ARelayConfig{URL: up.URL, Token: relayToken, Dialect: dialect})
			got, _, err := relayReply(t.Context(), r, Turn{ContextID: "c-local", TaskID: "t-local", Text: "hi"})
			if err != nil {
				t.Fatalf("Reply() error = %v, want nil; log:\n%s", err, logs)
			}
			if reply := strings.Join(got, ""); reply != "hello world" {
				t.Fatalf("relayed %q, want %q", reply, "hello world")
			}
			up.mu.Lock()
			subscribed := append([]a2a.SubscribeParams(nil), up.subscribed...)
			up.mu.Unlock()
			if len(subscribed) != 1 || subscribed[0].ID != "up-task" || subscribed[0].AfterSeq != 2 {
				t.Fatalf("SubscribeToTask calls = %+v, want one for up-task after seq 2", subscribed)
			}
			if c := up.canceledTasks(); len(c) != 0 {
				t.Fatalf("canceled upstream tasks %v, want none", c)
			}
			if !strings.Contains(logs.String(), "following its task again") {
				t.Errorf("log does not say the task is followed again:\n%s", logs)
			}
		})
	}
}
