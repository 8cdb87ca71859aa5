package turn

import (
	"context"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/ledger"
)

// A turn's spans (issue #37; Config.TracerProvider, nil: none). The turn span is a child
// of whatever span the request's context holds (the server's request span, or the
// caller's traceparent), and the parent of lease.acquire, ledger.commit (every append the
// turn makes: the wait for its group commit), agent.run (the backend adds its own client
// span under it) and, under agent.run, execute_tool {name} per tool call (package tools).
//
// Attributes are ids, sizes and states only, never message text: the contextId is not
// one of them (a peer chooses it, and it may name a person or a subject), the message id,
// the task id and the peer's name are. They are few, and a span's are set in one call
// when it ends where that is possible: with every span sampled, each attribute costs the
// turn about five allocations between the span, its export and the receiver (issue #37's
// cost target; docs/performance.md).
const (
	spanTurn   = "a2a.turn"
	spanLease  = "lease.acquire"
	spanCommit = "ledger.commit"
	spanAgent  = "agent.run"

	attrTaskID    = "a2a.task_id"
	attrMessageID = "a2a.message_id"
	attrPeer      = "gateway.peer"
	attrState     = "a2a.turn.state"
	attrRetry     = "a2a.turn.retry"       // a retried send: answered from the ledger, no turn ran
	attrEntries   = "ledger.entries"       // entries in the append
	attrBytes     = "a2a.turn.reply_bytes" // bytes of reply text the agent emitted
)

// endSpan ends span, its status Error (with err's type, not its text) when err is set.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, errorType(err))
	}
	span.End()
}

// errorType names an error for a span without its text (which may quote a message or
// an id the peer chose): its JSON-RPC code and reason, "-32603 INTERNAL" for an internal
// one.
func errorType(err error) string {
	e := a2a.ToRPCError(protocolError(err))
	if e.Reason == "" {
		return strconv.Itoa(e.Code)
	}
	return strconv.Itoa(e.Code) + " " + e.Reason
}

// tracedLedger stamps the entries of each append made under a traced context with the
// context's trace and span ids (the turn's span, or a tool call's), and times the append
// in a ledger.commit span. Without a valid span context in ctx it is the plain append:
// no ids, no span. With no TracerProvider but a caller's traceparent, the ids stamped are
// the caller's (the noop tracer passes the parent's span context through): the caller's
// trace still leads to the entry.
type tracedLedger struct {
	Ledger
	tracer trace.Tracer
}

// Append implements turnStore (and the Ledger's other appenders).
func (l *tracedLedger) Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error) {
	traceID, spanID := tracing.IDs(ctx)
	if traceID == "" {
		return l.Ledger.Append(ctx, req)
	}
	req.Entries = slices.Clone(req.Entries) // the caller's slice is left as it was
	for i := range req.Entries {
		if e := &req.Entries[i]; e.TraceID == "" && e.SpanID == "" {
			e.TraceID, e.SpanID = traceID, spanID
		}
	}
	ctx, span := l.tracer.Start(ctx, spanCommit, trace.WithAttributes(attribute.Int(attrEntries, len(req.Entries))))
	res, err := l.Ledger.Append(ctx, req)
	endSpan(span, err)
	return res, err
}
