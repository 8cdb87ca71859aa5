package logctx

import (
	"context"
	"log/slog"
	"slices"
)

// Keys of the request-scope attributes (house style B8: snake_case, in one file).
const (
	KeyRequestID = "request_id"
	KeyMethod    = "method"
	KeyContextID = "context_id"
	KeyTaskID    = "task_id"
)

// scopeKey is the private context key of a *scope.
type scopeKey struct{}

// scope is what a context carries: immutable once stored (every change copies it).
type scope struct {
	log   *slog.Logger // nil: slog.Default()
	attrs []slog.Attr  // at most one per key, in the order first added
}

func get(ctx context.Context) *scope {
	s, _ := ctx.Value(scopeKey{}).(*scope)
	return s
}

func put(ctx context.Context, s *scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// With returns a copy of ctx that carries l (see [From]); the attributes ctx carries
// are kept.
func With(ctx context.Context, l *slog.Logger) context.Context {
	s := scope{log: l}
	if old := get(ctx); old != nil {
		s.attrs = old.attrs
	}
	return put(ctx, &s)
}

// From returns the logger ctx carries, or slog.Default() if it carries none.
func From(ctx context.Context) *slog.Logger {
	if s := get(ctx); s != nil && s.log != nil {
		return s.log
	}
	return slog.Default()
}

// WithAttrs returns a copy of ctx that also carries attrs: a key ctx already carries
// takes the new value. Records logged with the returned context through a [NewHandler]
// handler carry them.
func WithAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	if len(attrs) == 0 {
		return ctx
	}
	var s scope
	if old := get(ctx); old != nil {
		s = *old
	}
	s.attrs = slices.Clone(s.attrs)
	for _, a := range attrs {
		if i := slices.IndexFunc(s.attrs, func(b slog.Attr) bool { return b.Key == a.Key }); i >= 0 {
			s.attrs[i] = a
			continue
		}
		s.attrs = append(s.attrs, a)
	}
	return put(ctx, &s)
}

// Attrs returns the attributes ctx carries (nil if none). The caller must not modify
// the slice.
func Attrs(ctx context.Context) []slog.Attr {
	if s := get(ctx); s != nil {
		return s.attrs
	}
	return nil
}

// WithRequestID returns a copy of ctx that carries the request id (attribute
// [KeyRequestID]).
func WithRequestID(ctx context.Context, id string) context.Context {
	return WithAttrs(ctx, slog.String(KeyRequestID, id))
}

// RequestID returns the request id ctx carries, or "" if none.
func RequestID(ctx context.Context) string {
	for _, a := range Attrs(ctx) {
		if a.Key == KeyRequestID {
			return a.Value.String()
		}
	}
	return ""
}

// Carry returns dst carrying the logger and attributes of src: work that outlives a
// request (it runs under dst's cancellation) keeps logging as part of that request.
// dst is returned as is when src carries nothing.
func Carry(dst, src context.Context) context.Context {
	if s := get(src); s != nil {
		return put(dst, s)
	}
	return dst
}
