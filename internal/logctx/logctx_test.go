package logctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/internal/logctx"
)

// logLines logs through a wrapped JSON handler and returns the decoded records.
func logLines(t *testing.T, log func(l *slog.Logger)) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{}
			}
			return a
		},
	}))
	log(logctx.NewLogger(base))
	var out []map[string]any
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestHandlerAddsContextAttrs(t *testing.T) {
	t.Parallel()
	ctx := logctx.WithRequestID(t.Context(), "r1")
	ctx = logctx.WithAttrs(ctx, slog.String(logctx.KeyMethod, "SendMessage"))
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want map[string]any
	}{
		{"with ctx", func(l *slog.Logger) { l.InfoContext(ctx, "m", "n", 1) },
			map[string]any{"msg": "m", "request_id": "r1", "method": "SendMessage", "n": 1.0}},
		{"without ctx attrs", func(l *slog.Logger) { l.InfoContext(context.Background(), "m") },
			map[string]any{"msg": "m"}},
		{"no ctx", func(l *slog.Logger) { l.Info("m") }, map[string]any{"msg": "m"}},
		{"record key wins", func(l *slog.Logger) { l.InfoContext(ctx, "m", "method", "own") },
			map[string]any{"msg": "m", "request_id": "r1", "method": "own"}},
		{"logger key wins", func(l *slog.Logger) { l.With("method", "logger").InfoContext(ctx, "m") },
			map[string]any{"msg": "m", "request_id": "r1", "method": "logger"}},
		{"group", func(l *slog.Logger) { l.WithGroup("g").InfoContext(ctx, "m", "x", 1) },
			map[string]any{"msg": "m", "g": map[string]any{"request_id": "r1", "method": "SendMessage", "x": 1.0}}},
		{"with attrs then ctx", func(l *slog.Logger) { l.With("component", "c").InfoContext(ctx, "m") },
			map[string]any{"msg": "m", "component": "c", "request_id": "r1", "method": "SendMessage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := logLines(t, tt.log)
			if diff := cmp.Diff([]map[string]any{tt.want}, got); diff != "" {
				t.Errorf("log line (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithAttrsReplacesAndCopies(t *testing.T) {
	t.Parallel()
	base := logctx.WithAttrs(t.Context(), slog.String("a", "1"), slog.String("b", "2"))
	child := logctx.WithAttrs(base, slog.String("a", "3"))
	str := func(as []slog.Attr) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.String())
		}
		return out
	}
	if diff := cmp.Diff([]string{"a=1", "b=2"}, str(logctx.Attrs(base))); diff != "" {
		t.Errorf("parent attrs changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a=3", "b=2"}, str(logctx.Attrs(child))); diff != "" {
		t.Errorf("child attrs (-want +got):\n%s", diff)
	}
	if got := logctx.RequestID(child); got != "" {
		t.Errorf("RequestID() = %q, want \"\"", got)
	}
}

func TestLoggerAndCarry(t *testing.T) {
	t.Parallel()
	if got := logctx.From(t.Context()); got != slog.Default() {
		t.Errorf("From(empty) = %p, want slog.Default()", got)
	}
	l := slog.New(slog.DiscardHandler)
	ctx := logctx.WithRequestID(logctx.With(t.Context(), l), "r2")
	if got := logctx.From(ctx); got != l {
		t.Errorf("From() = %p, want the logger given to With", got)
	}
	type other struct{}
	dst := context.WithValue(context.Background(), other{}, 1)
	carried := logctx.Carry(dst, ctx)
	if got := logctx.RequestID(carried); got != "r2" {
		t.Errorf("RequestID(Carry()) = %q, want r2", got)
	}
	if carried.Value(other{}) != 1 || logctx.From(carried) != l {
		t.Errorf("Carry() lost dst's values or src's logger")
	}
	parent, cancelParent := context.WithCancel(dst)
	child, cancelChild := context.WithCancel(logctx.Carry(parent, ctx))
	defer cancelChild()
	cancelParent()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Errorf("a context derived from Carry(dst, src) was not canceled with dst")
	}
	if got := logctx.Carry(dst, context.Background()); got != dst {
		t.Errorf("Carry(dst, empty) = %v, want dst", got)
	}
	if w := logctx.NewHandler(slog.DiscardHandler); logctx.NewHandler(w) != w {
		t.Errorf("NewHandler(wrapper) wrapped it again")
	}
}
