package push

import (
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestAttemptTraced: every attempt is a root client span naming the task and the
// attempt's number, with the HTTP status and the outcome, and the webhook receives that
// span's traceparent.
func TestAttemptTraced(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	rec := tracetest.NewSpanRecorder()
	opts := fastOptions(o)
	opts.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	run(t, opts)
	o.waitFinal(t, 1)
	reqs := rc.requests()
	spans := rec.Ended()
	if len(reqs) != 2 || len(spans) != 2 {
		t.Fatalf("%d requests, %d spans; want 2 of each (a 503, then a 200)", len(reqs), len(spans))
	}
	for i, s := range spans {
		attrs := map[string]string{}
		for _, a := range s.Attributes() {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		wantStatus, wantOutcome := []string{"503", "200"}[i], []string{"retry", "delivered"}[i]
		if attrs["a2a.task_id"] != "task-1" || attrs["push.attempt"] != []string{"1", "2"}[i] ||
			attrs["http.response.status_code"] != wantStatus || attrs["push.outcome"] != wantOutcome {
			t.Errorf("span %d attributes = %v, want task-1, attempt %d, status %s, %s", i, attrs, i+1, wantStatus, wantOutcome)
		}
		if s.SpanKind() != trace.SpanKindClient || s.Parent().IsValid() {
			t.Errorf("span %d: kind %v, parent %v; want a root client span", i, s.SpanKind(), s.Parent())
		}
		want := s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String()
		if got := reqs[i].Header.Get("traceparent"); !strings.Contains(got, want) {
			t.Errorf("request %d traceparent = %q, want the attempt's span %s", i, got, want)
		}
	}
}

// TestAttemptUntraced: without a provider the webhook POST carries no traceparent.
func TestAttemptUntraced(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	o := &memOutbox{}
	o.add(delivery("ev-1", "task-1", 1, rc.URL))
	run(t, fastOptions(o))
	o.waitFinal(t, 1)
	if got := rc.requests()[0].Header.Get("traceparent"); got != "" {
		t.Fatalf("traceparent = %q, want none", got)
	}
}
