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

// scopeKey is the private context key under which a *scope answers Value.
type scopeKey struct{}

// scope is a context carrying one step of the request scope: a logger, or attributes.
// It is its own context (one allocation per step, which matters on the send path) and
// links to the scope above it; it never changes once made.
type scope struct {
	context.Context              // the parent
	up              *scope       // the nearest scope above (nil: none)
	log             *slog.Logger // nil: the one above
	attrs           []slog.Attr
	one             [1]slog.Attr // attrs' storage when it holds one (no second allocation)
}

// Value returns the scope itself for scopeKey and asks the parent otherwise.
func (s *scope) Value(key any) any {
	if key == (scopeKey{}) {
		return s
	}
	return s.Context.Value(key)
}

func get(ctx context.Context) *scope {
	s, _ := ctx.Value(scopeKey{}).(*scope)
	return s
}

// With returns a copy of ctx that carries l (see [From]); the attributes ctx carries
// are kept.
func With(ctx context.Context, l *slog.Logger) context.Context {
	return &scope{Context: ctx, up: get(ctx), log: l}
}

// From returns the logger ctx carries, or slog.Default() if it carries none.
func From(ctx context.Context) *slog.Logger {
	for s := get(ctx); s != nil; s = s.up {
		if s.log != nil {
			return s.log
		}
	}
	return slog.Default()
}

// WithAttrs returns a copy of ctx that also carries attrs: a key ctx already carries
// takes the new value. Records logged with the returned context through a [NewHandler]
// handler carry them. attrs is not copied: the caller must not modify it afterwards.
func WithAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	if len(attrs) == 0 {
		return ctx
	}
	return &scope{Context: ctx, up: get(ctx), attrs: attrs}
}

// Attrs returns the attributes ctx carries, one per key (the newest value), in the
// order the keys were first added; nil if none.
func Attrs(ctx context.Context) []slog.Attr {
	var chain []*scope // newest first
	for s := get(ctx); s != nil; s = s.up {
		if len(s.attrs) > 0 {
			chain = append(chain, s)
		}
	}
	var out []slog.Attr
	for i := len(chain) - 1; i >= 0; i-- {
		for _, a := range chain[i].attrs {
			if j := slices.IndexFunc(out, func(b slog.Attr) bool { return b.Key == a.Key }); j >= 0 {
				out[j] = a
			} else {
				out = append(out, a)
			}
		}
	}
	return out
}

// WithAttr is [WithAttrs] for one attribute, in one allocation.
func WithAttr(ctx context.Context, a slog.Attr) context.Context {
	s := &scope{Context: ctx, up: get(ctx), one: [1]slog.Attr{a}}
	s.attrs = s.one[:]
	return s
}

// WithRequestID returns a copy of ctx that carries the request id (attribute
// [KeyRequestID]).
func WithRequestID(ctx context.Context, id string) context.Context {
	return WithAttr(ctx, slog.String(KeyRequestID, id))
}

// RequestID returns the request id ctx carries, or "" if none.
func RequestID(ctx context.Context) string {
	for s := get(ctx); s != nil; s = s.up {
		for i := len(s.attrs) - 1; i >= 0; i-- {
			if s.attrs[i].Key == KeyRequestID {
				return s.attrs[i].Value.String()
			}
		}
	}
	return ""
}

// Carry returns dst carrying the logger and attributes of src: work that outlives a
// request (it runs under dst's cancellation and deadline) keeps logging as part of that
// request. dst is returned as is when src carries nothing.
func Carry(dst, src context.Context) context.Context {
	if s := get(src); s != nil {
		return &scope{Context: dst, up: s}
	}
	return dst
}

// maxRequestIDLen bounds a caller's request id; a longer one is replaced.
const maxRequestIDLen = 64

// ValidRequestID reports whether a caller's request id (X-Request-Id, or the gRPC
// metadata x-request-id) may be kept: 1 to 64 characters of [A-Za-z0-9._-], so it can be
// logged and echoed as is. Every transport gives a request an id by this one rule.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
