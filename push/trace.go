package push

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracedAttempt is attempt under a client span of its own, a root: a delivery runs from
// the outbox after its turn, whose trace the deliverer does not know. The span names the
// task, the event and the attempt's number, and records the HTTP status and the outcome;
// the webhook's URL and the payload stay out of it.
func (dl *Deliverer) tracedAttempt(ctx context.Context, d Delivery) Attempt {
	ctx, span := dl.tracer.Start(ctx, "push delivery", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("a2a.task_id", d.TaskID),
			attribute.String("a2a.context_id", d.ContextID),
			attribute.String("push.event_id", d.ID),
			attribute.Int("push.attempt", d.Attempts+1)))
	a := dl.attempt(ctx, d)
	if span.IsRecording() {
		if a.Status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", a.Status))
		}
		span.SetAttributes(attribute.String("push.outcome", string(a.Outcome)))
		if a.Outcome != OutcomeDelivered {
			span.SetStatus(codes.Error, string(a.Outcome))
		}
	}
	span.End()
	return a
}
