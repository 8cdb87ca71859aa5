package turn

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// The texts of a traced turn: none may appear in a span attribute.
const (
	secretText  = "the weather in Lisbon is my secret"
	secretReply = "a reply about Lisbon"
	secretArgs  = `{"about":"Lisbon secrets"}`
	secretTool  = "tool result about Lisbon"
)

// spanTools is a ToolBox whose one tool makes its span with the turn's tracer and
// records its call and result through the turn, as package tools does.
type spanTools struct{}

func (spanTools) ForTurn(t ToolTurn) agent.Tools { return &spanTool{t: t} }

type spanTool struct{ t ToolTurn }

func (*spanTool) Specs() []agent.ToolSpec { return []agent.ToolSpec{{Name: "peers_list"}} }

func (s *spanTool) Call(ctx context.Context, c agent.ToolCall) (string, error) {
	ctx, span := s.t.Tracer.Start(ctx, "execute_tool "+c.Name)
	defer span.End()
	text := func(s string) []ledger.Part { return []ledger.Part{{Kind: ledger.PartText, Text: s}} }
	_, err := s.t.Record(ctx,
		ledger.Entry{Kind: ledger.KindToolCall, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel, CorrelationID: c.ID, Parts: text(c.Arguments)},
		ledger.Entry{Kind: ledger.KindToolResult, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, CorrelationID: c.ID, Parts: text(secretTool)})
	return secretTool, err
}

// toolAgent calls its one tool, then replies.
var toolAgent = funcAgent(func(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	if _, err := t.Tools.Call(ctx, agent.ToolCall{ID: "call-1", Name: "peers_list", Arguments: secretArgs}); err != nil {
		return agent.Result{}, err
	}
	return agent.Result{}, emit(secretReply)
})

func newTracedRunner(t *testing.T, tp trace.TracerProvider) (*Runner, *ledger.Store) {
	t.Helper()
	return newRunnerWith(t, Config{TracerProvider: tp, Tools: spanTools{}}, locking.NewLocal(), toolAgent)
}

func byName(spans []sdktrace.ReadOnlySpan) map[string]sdktrace.ReadOnlySpan {
	m := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		m[s.Name()] = s
	}
	return m
}

// A traced turn (blocking and streamed): a2a.turn under the request's span, with
// lease.acquire, ledger.commit and agent.run under it and execute_tool under agent.run;
// every entry of the turn carries the turn's trace id and the span id of the turn (the
// tool's for the tool entries); no span attribute holds the message's, the reply's or
// the tool's text.
func TestTurnSpans(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "SendMessage", true: "SendStreamingMessage"}[streamed], func(t *testing.T) {
			t.Parallel()
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			r, st := newTracedRunner(t, tp)
			ctx, req := tp.Tracer("test").Start(localCtx(t), "request")
			taskID := tracedSend(t, ctx, r, streamed)
			req.End()
			testutil.WaitFor(t, "the turn's span ended", func() bool { _, ok := byName(rec.Ended())[spanTurn]; return ok })
			spans := byName(rec.Ended())
			turnSpan := spans[spanTurn]
			if turnSpan.Parent().SpanID() != req.SpanContext().SpanID() {
				t.Errorf("a2a.turn's parent = %s, want the request's span", turnSpan.Parent().SpanID())
			}
			for _, name := range []string{spanLease, spanCommit, spanAgent} {
				if s, ok := spans[name]; !ok || s.Parent().SpanID() != turnSpan.SpanContext().SpanID() {
					t.Errorf("span %s missing or not a child of a2a.turn (%v)", name, ok)
				}
			}
			tool, ok := spans["execute_tool peers_list"]
			if !ok || tool.Parent().SpanID() != spans[spanAgent].SpanContext().SpanID() {
				t.Fatalf("execute_tool span missing or not under agent.run (%v)", ok)
			}
			checkTurnAttrs(t, turnSpan, taskID)
			checkEntryIDs(t, st, turnSpan.SpanContext(), tool.SpanContext())
			checkNoText(t, rec.Ended())
		})
	}
}

// tracedSend sends secretText in ctx, blocking or streamed to its end, and returns the
// task id.
func tracedSend(t *testing.T, ctx context.Context, r *Runner, streamed bool) string {
	t.Helper()
	p := &a2a.SendParams{Message: a2a.Message{MessageID: "m-traced", ContextID: "c-traced", Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.TextPart(secretText)}}}
	if !streamed {
		res, err := r.SendMessage(ctx, p)
		if err != nil || res.Task == nil || res.Task.Status.State != a2a.StateCompleted {
			t.Fatalf("SendMessage() = %+v, %v", res, err)
		}
		return res.Task.ID
	}
	s, err := r.SendStreamingMessage(ctx, p)
	if err != nil {
		t.Fatalf("SendStreamingMessage() error = %v", err)
	}
	defer s.Close()
	var taskID string
	for {
		ev, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			return taskID
		} else if err != nil {
			t.Fatalf("Next() error = %v", err)
		}
		if ev.Task != nil {
			taskID = ev.Task.ID
		}
	}
}

func checkTurnAttrs(t *testing.T, s sdktrace.ReadOnlySpan, taskID string) {
	t.Helper()
	got := map[string]string{}
	for _, kv := range s.Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	want := map[string]string{attrTaskID: taskID, attrMessageID: "m-traced", attrPeer: "local", attrState: "completed"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("a2a.turn attribute %s = %q, want %q", k, got[k], v)
		}
	}
}

// checkEntryIDs: every entry of the conversation carries the turn's trace id, and the
// span id of the turn, or of the tool call for the tool's entries.
func checkEntryIDs(t *testing.T, st *ledger.Store, turnSC, toolSC trace.SpanContext) {
	t.Helper()
	entries, err := st.Range(t.Context(), "local", "c-traced", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[ledger.Kind]bool{}
	for _, e := range entries {
		kinds[e.Kind] = true
		want := turnSC.SpanID().String()
		if e.Kind == ledger.KindToolCall || e.Kind == ledger.KindToolResult {
			want = toolSC.SpanID().String()
		}
		if e.TraceID != turnSC.TraceID().String() || e.SpanID != want {
			t.Errorf("seq %d (%s) ids = %q %q, want %s %s", e.Seq, e.Kind, e.TraceID, e.SpanID, turnSC.TraceID(), want)
		}
	}
	for _, k := range []ledger.Kind{ledger.KindUserMessage, ledger.KindToolCall, ledger.KindToolResult, ledger.KindAgentReply, ledger.KindStatus} {
		if !kinds[k] {
			t.Errorf("no %s entry stored", k)
		}
	}
}

func checkNoText(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			v := kv.Value.Emit()
			for _, text := range []string{secretText, secretReply, secretArgs, secretTool, "Lisbon"} {
				if strings.Contains(v, text) {
					t.Errorf("span %s attribute %s = %q holds message text", s.Name(), kv.Key, v)
				}
			}
		}
		if strings.Contains(s.Status().Description, "Lisbon") {
			t.Errorf("span %s status holds message text", s.Name())
		}
	}
}

// Without a TracerProvider, a caller's traceparent still reaches the entries (the noop
// tracer passes the caller's span context through); without one either, they carry none.
func TestEntryIDsWithoutProvider(t *testing.T) {
	t.Parallel()
	r, st := newTracedRunner(t, nil)
	ctx := tracing.Extract(localCtx(t), http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	if _, err := send(ctx, r, "c-parent", "", "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := send(localCtx(t), r, "c-none", "", "hello"); err != nil {
		t.Fatal(err)
	}
	for contextID, want := range map[string][2]string{
		"c-parent": {"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"},
		"c-none":   {"", ""},
	} {
		entries, err := st.Range(t.Context(), "local", contextID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if [2]string{e.TraceID, e.SpanID} != want {
				t.Errorf("%s seq %d (%s) ids = %q %q, want %q", contextID, e.Seq, e.Kind, e.TraceID, e.SpanID, want)
			}
		}
	}
}
