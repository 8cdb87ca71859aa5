package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
)

func newA2AGoClient(t *testing.T, s *Server) (*a2aclient.Client, *a2ago.AgentCard) {
	t.Helper()
	hc := newHTTPClient(t)
	card, err := agentcard.NewResolver(hc).Resolve(t.Context(), s.URL())
	if err != nil {
		t.Fatalf("Resolve(card) error = %v", err)
	}
	c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatalf("NewFromCard() error = %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c, card
}

func userMessage(contextID, text string) *a2ago.MessageSendParams {
	m := a2ago.NewMessage(a2ago.MessageRoleUser, a2ago.TextPart{Text: text})
	m.ContextID = contextID
	return &a2ago.MessageSendParams{Message: m}
}

func taskText(t *testing.T, task *a2ago.Task) string {
	t.Helper()
	var b strings.Builder
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			if tp, ok := p.(a2ago.TextPart); ok {
				b.WriteString(tp.Text)
			}
		}
	}
	return b.String()
}

// TestA2AGoClient drives the real gateway with the real a2a-go v0.3 client.
func TestA2AGoClient(t *testing.T) {
	cfg := testConfig(t)
	cfg.EchoDelay = 5 * time.Millisecond // chunks arrive one by one, as from a model
	s := startServer(t, cfg)
	c, card := newA2AGoClient(t, s)
	ctx := t.Context()

	if card.PreferredTransport != a2ago.TransportProtocolJSONRPC || !card.Capabilities.Streaming || card.URL != s.URL() {
		t.Fatalf("card = transport %q streaming %v url %q, want JSONRPC, true, %q", card.PreferredTransport, card.Capabilities.Streaming, card.URL, s.URL())
	}

	// First send.
	res, err := c.SendMessage(ctx, userMessage("tenant/a", "hello gateway"))
	if err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	first, ok := res.(*a2ago.Task)
	if !ok {
		t.Fatalf("SendMessage() result = %T, want *a2a.Task", res)
	}
	if first.ContextID != "tenant/a" || first.Status.State != a2ago.TaskStateCompleted || taskText(t, first) != "echo: hello gateway" {
		t.Fatalf("first task = ctx %q state %q text %q", first.ContextID, first.Status.State, taskText(t, first))
	}

	// Second send in the same context: same contextId, new task.
	res, err = c.SendMessage(ctx, userMessage("tenant/a", "second turn"))
	if err != nil {
		t.Fatalf("second SendMessage() error = %v", err)
	}
	second := res.(*a2ago.Task)
	if second.ContextID != "tenant/a" || second.ID == first.ID || taskText(t, second) != "echo: second turn" {
		t.Fatalf("second task = ctx %q id %q (first %q) text %q", second.ContextID, second.ID, first.ID, taskText(t, second))
	}

	// Stream: Task first, ordered updates, final status, chunks concatenate to the reply.
	var events []a2ago.Event
	for ev, err := range c.SendStreamingMessage(ctx, userMessage("tenant/a", "stream this reply in chunks")) {
		if err != nil {
			t.Fatalf("SendStreamingMessage() error = %v", err)
		}
		events = append(events, ev)
	}
	if len(events) < 4 {
		t.Fatalf("stream gave %d events, want >= 4", len(events))
	}
	streamTask, ok := events[0].(*a2ago.Task)
	if !ok {
		t.Fatalf("first stream event = %T, want *a2a.Task", events[0])
	}
	var chunks strings.Builder
	var artifactID a2ago.ArtifactID
	nChunks := 0
	for i, ev := range events[1:] {
		switch e := ev.(type) {
		case *a2ago.TaskArtifactUpdateEvent:
			if artifactID == "" {
				artifactID = e.Artifact.ID
			}
			if e.Artifact.ID != artifactID || e.Append != (nChunks > 0) {
				t.Fatalf("chunk %d: artifactId %q append %v, want stable id %q and append after the first", nChunks, e.Artifact.ID, e.Append, artifactID)
			}
			for _, p := range e.Artifact.Parts {
				chunks.WriteString(p.(a2ago.TextPart).Text)
			}
			nChunks++
			if e.LastChunk != (i == len(events)-3) {
				t.Fatalf("chunk %d lastChunk = %v", nChunks, e.LastChunk)
			}
		case *a2ago.TaskStatusUpdateEvent:
			last := i == len(events)-2
			if e.Final != last {
				t.Fatalf("status event %d final = %v, want %v", i+1, e.Final, last)
			}
			if last && e.Status.State != a2ago.TaskStateCompleted {
				t.Fatalf("final state = %q, want completed", e.Status.State)
			}
		default:
			t.Fatalf("stream event %d = %T", i+1, ev)
		}
	}
	if chunks.String() != "echo: stream this reply in chunks" || nChunks < 2 {
		t.Fatalf("stream chunks = %q in %d chunks", chunks.String(), nChunks)
	}
	got, err := c.GetTask(ctx, &a2ago.TaskQueryParams{ID: streamTask.ID})
	if err != nil || taskText(t, got) != chunks.String() {
		t.Fatalf("GetTask(streamed) = %q, %v; want the streamed reply %q", taskText(t, got), err, chunks.String())
	}

	// historyLength 0 and 1.
	zero, one := 0, 1
	got, err = c.GetTask(ctx, &a2ago.TaskQueryParams{ID: first.ID, HistoryLength: &zero})
	if err != nil || len(got.History) != 0 {
		t.Fatalf("GetTask(historyLength 0) history = %d, err %v; want 0", len(got.History), err)
	}
	got, err = c.GetTask(ctx, &a2ago.TaskQueryParams{ID: first.ID, HistoryLength: &one})
	if err != nil || len(got.History) != 1 {
		t.Fatalf("GetTask(historyLength 1) history = %d, err %v; want 1", len(got.History), err)
	}
	got, err = c.GetTask(ctx, &a2ago.TaskQueryParams{ID: first.ID})
	if err != nil || len(got.History) != 2 || got.History[0].Role != a2ago.MessageRoleUser {
		t.Fatalf("GetTask(default) history = %d, err %v; want user message then reply", len(got.History), err)
	}

	// Cancel of a completed task, and an unknown task.
	if _, err := c.CancelTask(ctx, &a2ago.TaskIDParams{ID: first.ID}); !errors.Is(err, a2ago.ErrTaskNotCancelable) {
		t.Fatalf("CancelTask(completed) error = %v, want ErrTaskNotCancelable (-32002)", err)
	}
	if _, err := c.GetTask(ctx, &a2ago.TaskQueryParams{ID: "no-such-task"}); !errors.Is(err, a2ago.ErrTaskNotFound) {
		t.Fatalf("GetTask(unknown) error = %v, want ErrTaskNotFound (-32001)", err)
	}
	// A follow-up to a terminal task is refused with -32004.
	follow := userMessage("tenant/a", "more")
	follow.Message.TaskID = first.ID
	if _, err := c.SendMessage(ctx, follow); !errors.Is(err, a2ago.ErrUnsupportedOperation) {
		t.Fatalf("SendMessage(to completed task) error = %v, want ErrUnsupportedOperation (-32004)", err)
	}
	// A follow-up whose contextId does not match its task is -32602.
	wrong := userMessage("tenanta", "more")
	wrong.Message.TaskID = second.ID
	if _, err := c.SendMessage(ctx, wrong); !errors.Is(err, a2ago.ErrInvalidParams) {
		t.Fatalf("SendMessage(task of another context) error = %v, want ErrInvalidParams (-32602)", err)
	}
}
