package logctx

import (
	"context"
	"log/slog"
	"slices"
)

// Handler is a slog.Handler that adds the attributes of the record's context (see
// [WithAttrs]) to every record before passing it on. Create it with [NewHandler].
type Handler struct {
	next slog.Handler
	// keys are the top-level keys the logger already adds (With before any
	// WithGroup); the context's attributes do not repeat them.
	keys []string
	// grouped: a group is open, so keys added since are not top-level.
	grouped bool
}

// NewHandler returns next wrapped so that records carry their context's attributes
// first, then their own; a key the record or the logger already has is left out. It
// returns next itself when next is already such a wrapper.
func NewHandler(next slog.Handler) slog.Handler {
	if _, ok := next.(*Handler); ok {
		return next
	}
	return &Handler{next: next}
}

// NewLogger returns a logger whose handler is l's wrapped by [NewHandler] (l itself if
// it is wrapped already).
func NewLogger(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(*Handler); ok {
		return l
	}
	return slog.New(NewHandler(l.Handler()))
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle adds ctx's attributes to r and passes it to the wrapped handler, returning
// its error.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	attrs := Attrs(ctx)
	if len(attrs) == 0 {
		return h.next.Handle(ctx, r)
	}
	own := make(map[string]bool, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		own[a.Key] = true
		return true
	})
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	for _, a := range attrs {
		if !own[a.Key] && !slices.Contains(h.keys, a.Key) {
			out.AddAttrs(a)
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs returns the wrapper of next.WithAttrs(attrs).
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := &Handler{next: h.next.WithAttrs(attrs), keys: h.keys, grouped: h.grouped}
	if !h.grouped {
		c.keys = slices.Clone(h.keys)
		for _, a := range attrs {
			c.keys = append(c.keys, a.Key)
		}
	}
	return c
}

// WithGroup returns the wrapper of next.WithGroup(name).
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &Handler{next: h.next.WithGroup(name), keys: h.keys, grouped: true}
}
