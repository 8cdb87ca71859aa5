package turn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// wireError is what a peer sees of an error: the JSON-RPC code, the message, the field and
// the ErrorInfo metadata.
type wireError struct {
	Code     int
	Message  string
	Field    string
	Metadata map[string]string
}

func wireOf(err error) wireError {
	e := a2a.ToRPCError(err)
	return wireError{Code: e.Code, Message: e.Message, Field: e.Field, Metadata: e.Metadata}
}

func TestProtocolError(t *testing.T) {
	t.Parallel()
	badCtx := contextid.Validate("a\nb")
	longID := &ledger.FieldError{Entry: 0, Field: "messageId", Reason: "at most 256 bytes (got 257)"}
	passThrough := a2a.Errorf(a2a.ErrTaskNotCancelable, "task %q is already %s", "t1", a2a.StateCompleted)
	tests := []struct {
		name     string
		err      error
		sentinel error // what the mapped error must wrap
		want     wireError
	}{
		{"contextId refused by contextid", badCtx, a2a.ErrInvalidParams,
			wireError{-32602, "message.contextId: control character at byte 1", "message.contextId", nil}},
		{"contextId param of a list", &paramError{Field: "contextId", Err: badCtx}, a2a.ErrInvalidParams,
			wireError{-32602, "contextId: control character at byte 1", "contextId", nil}},
		{"ledger field of the message", longID, a2a.ErrInvalidParams,
			wireError{-32602, "message.messageId: at most 256 bytes (got 257)", "message.messageId", nil}},
		{"ledger field, wrapped", fmt.Errorf("append inbound message: %w", longID), a2a.ErrInvalidParams,
			wireError{-32602, "message.messageId: at most 256 bytes (got 257)", "message.messageId", nil}},
		{"ledger field of the request", &ledger.FieldError{Entry: -1, Field: "owner", Reason: "empty"}, a2a.ErrInvalidParams,
			wireError{-32602, "owner: empty", "owner", nil}},
		{"ledger entry as a whole", &ledger.FieldError{Entry: 1, Reason: "too large"}, a2a.ErrInvalidParams,
			wireError{-32602, "message: too large", "message", nil}},
		{"param with a reason", &paramError{Field: "pageToken", Reason: "is not a token this server issued"}, a2a.ErrInvalidParams,
			wireError{-32602, "pageToken: is not a token this server issued", "pageToken", nil}},
		{"parts limit", &limitError{Limit: "parts", Field: "message.parts", Got: 3, Max: 2}, a2a.ErrInvalidParams,
			wireError{-32602, "message.parts: the message has 3 parts; the limit is 2", "message.parts", nil}},
		{"part bytes limit", &limitError{Limit: "part_bytes", Field: "message.parts[1]", Got: 9, Max: 5}, a2a.ErrInvalidParams,
			wireError{-32602, "message.parts[1]: the part holds 9 bytes; the limit is 5 per part", "message.parts[1]", nil}},
		{"message bytes limit", &limitError{Limit: "message_bytes", Field: "message.parts", Got: 12, Max: 8}, a2a.ErrInvalidParams,
			wireError{-32602, "message.parts: the message holds 12 bytes; the limit is 8", "message.parts", nil}},
		{"stream limit", &streamLimitError{Peer: "p", Max: 4}, a2a.ErrRateLimited,
			wireError{-32000, `peer "p" has 4 streams open, the limit; close one and retry`, "", map[string]string{"peer": "p", "retryAfterSeconds": "1"}}},
		{"busy, holder known", &busyError{ContextID: "c1", Holder: "t9", Err: &locking.HeldError{Key: "k", Holder: "t9"}}, a2a.ErrContextBusy,
			wireError{-32004, `context "c1" is busy: task t9 is running; retry when it completes`, "", map[string]string{"contextId": "c1", "taskId": "t9"}}},
		{"busy, holder unknown", &busyError{ContextID: "c1"}, a2a.ErrContextBusy,
			wireError{-32004, `context "c1" is busy: another task is running; retry when it completes`, "", map[string]string{"contextId": "c1"}}},
		{"held without a context", &locking.HeldError{Key: "k"}, a2a.ErrContextBusy,
			wireError{-32004, "another task is running in this context; retry when it completes", "", nil}},
		{"fenced", fmt.Errorf("append: %w", ledger.ErrFenced), a2a.ErrContextBusy,
			wireError{-32004, "a newer turn took over this context; retry when it completes", "", nil}},
		{"task not found", &taskNotFoundError{TaskID: "t1"}, a2a.ErrTaskNotFound,
			wireError{-32001, `task "t1" not found`, "", nil}},
		{"shutting down", errShutdown, a2a.ErrUnavailable,
			wireError{-32000, "the gateway is shutting down; retry on another instance or later", "", nil}},
		{"locker closed", locking.ErrClosed, a2a.ErrUnavailable,
			wireError{-32000, "the gateway is shutting down; retry on another instance or later", "", nil}},
		{"lock service down", fmt.Errorf("%w: dial tcp: refused", locking.ErrUnavailable), a2a.ErrLockUnavailable,
			wireError{-32603, "the lock service is unavailable; retry later", "", nil}},
		{"storage full", fmt.Errorf("append inbound message: %w", &ledger.StorageError{Op: "commit", Cause: ledger.CauseFull, Err: syscall.ENOSPC}), a2a.ErrStorageUnavailable,
			wireError{-32000, "the gateway's storage is full; nothing of this request was stored; retry later", "", map[string]string{"cause": "full"}}},
		{"storage read-only", &ledger.StorageError{Op: "commit", Cause: ledger.CauseNotWritable, Err: syscall.EROFS}, a2a.ErrUnavailable,
			wireError{-32000, "the gateway's storage is not writable; nothing of this request was stored; retry later", "", map[string]string{"cause": "not writable"}}},
		{"storage failing", &ledger.StorageError{Op: "commit", Cause: ledger.CauseFailing, Err: syscall.EIO}, a2a.ErrStorageUnavailable,
			wireError{-32000, "the gateway's storage is failing (I/O error); nothing of this request was stored; retry later", "", map[string]string{"cause": "failing (I/O error)"}}},
		{"a2a error", passThrough, a2a.ErrTaskNotCancelable,
			wireError{-32002, `task "t1" is already completed`, "", nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := protocolError(tt.err)
			if !errors.Is(got, tt.sentinel) {
				t.Fatalf("protocolError(%v) = %v, want it to wrap %v", tt.err, got, tt.sentinel)
			}
			if diff := cmp.Diff(tt.want, wireOf(got)); diff != "" {
				t.Errorf("protocolError(%v) on the wire (-want +got):\n%s", tt.err, diff)
			}
			for _, internal := range []string{"ledger:", "entries[", "lease held", "locker closed", "dial tcp"} {
				if strings.Contains(wireOf(got).Message, internal) {
					t.Errorf("protocolError(%v) message %q shows Go-internal text %q", tt.err, wireOf(got).Message, internal)
				}
			}
		})
	}
}

func TestProtocolErrorKeepsWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	if got := protocolError(nil); got != nil {
		t.Fatalf("protocolError(nil) = %v, want nil", got)
	}
	ae := a2a.InvalidParams("x", "bad")
	if got := protocolError(ae); got != ae {
		t.Errorf("protocolError(%v) = %v, want the same *a2a.Error", ae, got)
	}
	for _, err := range []error{context.Canceled, io.EOF, errors.New("disk on fire"), ledger.ErrClosed} {
		if got := protocolError(err); got != err {
			t.Errorf("protocolError(%v) = %v, want it unchanged", err, got)
		}
	}
}

// countEntries returns how many entries owner's conversation contextID holds (0 when it
// does not exist).
func countEntries(t *testing.T, st *ledger.Store, owner, contextID string) int {
	t.Helper()
	entries, err := st.Range(t.Context(), owner, contextID, 0, 0)
	if errors.Is(err, ledger.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatalf("Range(%q) error = %v", contextID, err)
	}
	return len(entries)
}

// TestInvalidMessageRefusedPlainly sends messages the ledger or the contextId rules refuse,
// through SendMessage and SendStreamingMessage, to a new and to an existing conversation:
// each gets -32602 with a plain message naming the message's field once, nothing of it is
// stored, and what start took (the lease, the stream slot) is given back.
func TestInvalidMessageRefusedPlainly(t *testing.T) {
	t.Parallel()
	r, st := newRunnerWith(t, Config{MaxStreamsPerPeer: 1}, locking.NewLocal(), agent.Echo{})
	if _, err := send(localCtx(t), r, "exists", "", "hello"); err != nil {
		t.Fatalf("first send error = %v", err)
	}
	owner := contextid.LocalOwner
	before := countEntries(t, st, owner, "exists")
	longID := strings.Repeat("m", 257)
	tests := []struct {
		name, contextID, messageID string
		want, never                string
	}{
		{"long messageId, new context", "fresh", longID, "message.messageId: at most 256 bytes", "ledger:"},
		{"long messageId, existing context", "exists", longID, "message.messageId: at most 256 bytes", "ledger:"},
		{"control char in contextId", "a\nb", "m1", "message.contextId: control character at byte 1", "contextId: contextId:"},
		{"long contextId", strings.Repeat("c", 257), "m2", "message.contextId: at most 256 bytes", "contextId: contextId:"},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{false, true} {
			p := &a2a.SendParams{Message: a2a.Message{MessageID: tt.messageID, ContextID: tt.contextID, Role: a2a.RoleUser,
				Parts: []a2a.Part{a2a.TextPart("hi")}}}
			var err error
			if streaming {
				var s a2a.Stream
				if s, err = r.SendStreamingMessage(localCtx(t), p); s != nil {
					s.Close()
				}
			} else {
				_, err = r.SendMessage(localCtx(t), p)
			}
			w := wireOf(err)
			if w.Code != -32602 || !strings.HasPrefix(w.Message, tt.want) || strings.Contains(w.Message, tt.never) {
				t.Errorf("%s (streaming %v): error %d %q, want -32602 starting %q, without %q", tt.name, streaming, w.Code, w.Message, tt.want, tt.never)
			}
			if n := strings.Count(w.Message, "contextId"); strings.Contains(tt.want, "contextId") && n != 1 {
				t.Errorf("%s: message %q names contextId %d times, want once", tt.name, w.Message, n)
			}
		}
	}
	if n := r.Streams(); n != 0 {
		t.Errorf("Streams() after refused streaming sends = %d, want 0 (the slot is given back)", n)
	}
	// The lease of the existing context was given back: a good message runs.
	if res, err := send(localCtx(t), r, "exists", "", "again"); err != nil || res.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("send after the refusals = %+v, %v; want it completed", res.Task, err)
	}
	_ = r.Close(t.Context()) // drains the audit queue: nothing may be written after this
	if got, want := countEntries(t, st, owner, "exists"), before+4; got != want {
		t.Errorf("entries of the existing conversation = %d, want %d (its first turn and the last send only)", got, want)
	}
	convs, err := st.List(t.Context(), ledger.ListOptions{})
	if err != nil || len(convs) != 1 || convs[0].ContextID != "exists" {
		t.Errorf("conversations = %+v, %v; want only \"exists\": a refused message creates none", convs, err)
	}
}

func TestLimitErrorsCarryFieldAndReason(t *testing.T) {
	t.Parallel()
	r, st := newRunnerWith(t, Config{MaxParts: 2, MaxPartBytes: 5, MaxMessageBytes: 8}, locking.NewLocal(), agent.Echo{})
	tests := []struct {
		name  string
		parts []string
		want  limitError
	}{
		{"parts", []string{"a", "b", "c"}, limitError{Limit: "parts", Field: "message.parts", Got: 3, Max: 2}},
		{"part bytes", []string{"abc", "abcdefghi"}, limitError{Limit: "part_bytes", Field: "message.parts[1]", Got: 9, Max: 5}},
		{"message bytes", []string{"abcde", "abcd"}, limitError{Limit: "message_bytes", Field: "message.parts", Got: 9, Max: 8}},
	}
	for _, tt := range tests {
		m := a2a.Message{MessageID: "m-" + tt.name, ContextID: "limits", Role: a2a.RoleUser}
		for _, s := range tt.parts {
			m.Parts = append(m.Parts, a2a.TextPart(s))
		}
		var le *limitError
		if err := r.checkLimits(&m); !errors.As(err, &le) {
			t.Fatalf("%s: checkLimits() = %v, want a *limitError", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, *le); diff != "" {
			t.Errorf("%s: limitError (-want +got):\n%s", tt.name, diff)
		}
		_, err := r.SendMessage(localCtx(t), &a2a.SendParams{Message: m})
		if w := wireOf(err); w.Code != -32602 || w.Field != tt.want.Field || w.Message != tt.want.Field+": "+tt.want.Reason() {
			t.Errorf("%s: SendMessage error = %+v, want -32602 on %s: %s", tt.name, w, tt.want.Field, tt.want.Reason())
		}
	}
	_ = r.Close(t.Context())
	if n := countEntries(t, st, contextid.LocalOwner, "limits"); n != 0 {
		t.Errorf("entries after messages over the limits = %d, want 0", n)
	}
}

// ctxKey is a value a transport attaches to the request's context (a request id).
type ctxKey struct{}

// ctxRecorder is a slog.Handler that records, for each line, the request id found in the
// context it was logged with.
type ctxRecorder struct {
	mu    sync.Mutex
	lines map[string]any // message -> request id
}

func (h *ctxRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *ctxRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *ctxRecorder) WithGroup(string) slog.Handler            { return h }
func (h *ctxRecorder) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines[r.Message] = ctx.Value(ctxKey{})
	return nil
}

// failingLocker fails every Acquire as an unreachable lock service does.
type failingLocker struct{}

func (failingLocker) Acquire(context.Context, string, string) (*locking.Lease, error) {
	return nil, fmt.Errorf("%w: connection refused", locking.ErrUnavailable)
}
func (failingLocker) Wait(context.Context, string) error { return nil }
func (failingLocker) Holder(context.Context, string) (string, error) {
	return "", fmt.Errorf("%w: connection refused", locking.ErrUnavailable)
}

// newLoggedRunner is a Runner over a new ledger that logs to h.
func newLoggedRunner(t *testing.T, locks Locker, ag agent.Agent, h slog.Handler) *Runner {
	t.Helper()
	st := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	r := New(Config{}, st, locks, ag, slog.New(h))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Close(ctx)
		_ = st.Close()
	})
	return r
}

// TestLogLinesCarryTheRequestContext checks that log lines of a request, including those
// its turn writes after the request has returned, are logged with a context that holds the
// request's values.
func TestLogLinesCarryTheRequestContext(t *testing.T) {
	t.Parallel()
	rec := &ctxRecorder{lines: map[string]any{}}
	failing := funcAgent(func(context.Context, agent.Turn, agent.Emit) (agent.Result, error) {
		return agent.Result{}, errors.New("backend down")
	})
	r := newLoggedRunner(t, locking.NewLocal(), failing, rec)
	ctx := context.WithValue(localCtx(t), ctxKey{}, "req-1")
	if res, err := send(ctx, r, "logs", "", "hi"); err != nil || res.Task.Status.State != a2a.StateFailed {
		t.Fatalf("send = %+v, %v; want the task failed", res.Task, err)
	}
	down := newLoggedRunner(t, failingLocker{}, agent.Echo{}, rec)
	_, err := send(context.WithValue(localCtx(t), ctxKey{}, "req-2"), down, "logs", "", "hi")
	if !errors.Is(err, a2a.ErrLockUnavailable) {
		t.Fatalf("send with the lock service down error = %v, want ErrLockUnavailable", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := map[string]any{"agent failed": "req-1", "lease unavailable": "req-2"}
	if diff := cmp.Diff(want, rec.lines); diff != "" {
		t.Errorf("request id of each log line (-want +got):\n%s", diff)
	}
}
