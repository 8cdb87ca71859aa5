package tracing

import (
	"context"
	"log/slog"
)

// LogHandler is a slog.Handler that adds trace_id and span_id to every record logged
// with a context holding a valid span context. Create it with [NewLogHandler].
type LogHandler struct{ next slog.Handler }

// NewLogHandler wraps next so that records logged with a traced context carry its
// trace_id and span_id; next itself is returned when it is such a wrapper already.
func NewLogHandler(next slog.Handler) slog.Handler {
	if _, ok := next.(*LogHandler); ok {
		return next
	}
	return &LogHandler{next: next}
}

// Enabled reports whether the wrapped handler handles level.
func (h *LogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle adds ctx's trace and span ids to r and passes it on.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if traceID, spanID := IDs(ctx); traceID != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", traceID), slog.String("span_id", spanID))
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs returns the wrapper of next's WithAttrs.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogHandler{next: h.next.WithAttrs(attrs)}
}

// WithGroup returns the wrapper of next's WithGroup.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{next: h.next.WithGroup(name)}
}
