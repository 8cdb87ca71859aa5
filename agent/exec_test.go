package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/google/go-cmp/cmp"
)

func newTestExec(t *testing.T, cfg ExecConfig) (*Exec, *logBuffer) {
	t.Helper()
	logger, logs := testLogger()
	e, err := NewExec(cfg, logger)
	if err != nil {
		t.Fatalf("NewExec(%+v) error = %v", cfg, err)
	}
	return e, logs
}

var textRequest = projection.Request{System: "Be brief.", Messages: []projection.Message{
	{Role: projection.RoleUser, Content: "hi"}, {Role: projection.RoleAssistant, Content: "hello"}, {Role: projection.RoleUser, Content: "now?"},
}}

func TestExecReplies(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é世🎉", 1500) // 13.5 KB: several 4 KiB chunks
	tests := []struct {
		name   string
		cfg    ExecConfig
		turn   Turn
		want   string
		wantIR bool
	}{
		{name: "cat returns the prompt", cfg: ExecConfig{Command: "cat"}, turn: Turn{Prompt: "user: hi\n\nhello 世界 🎉", Text: "x"}, want: "user: hi\n\nhello 世界 🎉"},
		{name: "text falls back to the message without a prompt", cfg: ExecConfig{Command: "cat", Input: ExecInputText}, turn: Turn{Text: "only text"}, want: "only text"},
		{name: "the request as text without a prompt", cfg: ExecConfig{Command: "cat"}, turn: Turn{Text: "now?", Request: textRequest}, want: textRequest.Text()},
		{name: "large multi-byte output", cfg: ExecConfig{Command: "cat"}, turn: Turn{Prompt: big}, want: big},
		{
			name: "environment",
			cfg:  ExecConfig{Command: `printf '%s|%s|%s|%s' "$GATEWAY_CONTEXT_ID" "$GATEWAY_TASK_ID" "$GATEWAY_PEER" "$EXTRA"`, Env: []string{"EXTRA=x y", "GATEWAY_PEER=forged"}},
			turn: Turn{ContextID: "ctx-42", TaskID: "task-7", Peer: "peer-a"},
			want: "ctx-42|task-7|peer-a|x y",
		},
		{name: "stdin ignored", cfg: ExecConfig{Command: "echo done"}, turn: Turn{Prompt: strings.Repeat("x", 1<<20)}, want: "done\n"},
		{name: "no output", cfg: ExecConfig{Command: "true"}, turn: Turn{Prompt: "p"}, want: ""},
		{name: "stderr is not the reply", cfg: ExecConfig{Command: "echo oops >&2; printf ok"}, want: "ok"},
		{
			name: "input-required marker split across writes",
			cfg:  ExecConfig{Command: `printf '[INPUT_'; sleep 0.05; printf 'REQUIRED]\nWhich one?'`},
			want: "Which one?", wantIR: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, _ := newTestExec(t, tt.cfg)
			var got []string
			res, err := e.Reply(t.Context(), tt.turn, collect(&got))
			if err != nil || res.InputRequired != tt.wantIR {
				t.Fatalf("Reply() = %+v, %v, want InputRequired %v and no error", res, err, tt.wantIR)
			}
			for _, c := range got {
				if c == "" || len(c) > execChunkMax || !utf8.ValidString(c) {
					t.Fatalf("chunk of %d bytes is empty, over %d bytes or not valid UTF-8", len(c), execChunkMax)
				}
			}
			if s := strings.Join(got, ""); s != tt.want {
				t.Errorf("reply = %.80q (%d bytes), want %.80q (%d bytes)", s, len(s), tt.want, len(tt.want))
			}
		})
	}
}

func TestExecStreamsAsRead(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	// The second part is written only after the first reached the caller.
	e, _ := newTestExec(t, ExecConfig{Command: `printf first; while [ ! -e "$GATE" ]; do sleep 0.01; done; printf second`,
		Env: []string{"GATE=" + gate}, Timeout: 10 * time.Second})
	var got []string
	_, err := e.Reply(t.Context(), Turn{}, func(c string) error {
		if len(got) == 0 {
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				return err
			}
		}
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatalf("Reply() error = %v", err)
	}
	if diff := cmp.Diff([]string{"first", "second"}, got); diff != "" {
		t.Errorf("emitted chunks (-want +got):\n%s", diff)
	}
}

func TestExecNeverSplitsACharacter(t *testing.T) {
	t.Parallel()
	// "世界🎉é" written in pieces that cut every character.
	cmd := `printf '\344'; sleep 0.03; printf '\270\226\347'; sleep 0.03; printf '\225'; sleep 0.03; ` +
		`printf '\214\360\237'; sleep 0.03; printf '\216\211\303'; sleep 0.03; printf '\251'`
	e, _ := newTestExec(t, ExecConfig{Command: cmd})
	var got []string
	if _, err := e.Reply(t.Context(), Turn{}, collect(&got)); err != nil {
		t.Fatalf("Reply() error = %v", err)
	}
	for _, c := range got {
		if !utf8.ValidString(c) {
			t.Errorf("chunk %q splits a character (all: %q)", c, got)
		}
	}
	if s := strings.Join(got, ""); s != "世界🎉é" {
		t.Errorf("reply = %q, want %q", s, "世界🎉é")
	}
	if len(got) < 2 {
		t.Errorf("got %d chunk(s), want the pieces streamed separately", len(got))
	}
}

func TestExecJSONInput(t *testing.T) {
	t.Parallel()
	e, _ := newTestExec(t, ExecConfig{Command: "cat", Input: ExecInputJSON})
	turn := Turn{ContextID: "ctx-1", TaskID: "task-1", Peer: "peer-a", Text: "now?", Prompt: "[Previous]\nuser: hi\n[End]\n\nnow?",
		Request: projection.Request{System: "Be brief.", Messages: []projection.Message{
			{Role: projection.RoleUser, Content: "hi", Trust: projection.TrustPeerUntrusted},
			{Role: projection.RoleAssistant, Trust: projection.TrustAgent, ToolCalls: []projection.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}}},
			{Role: projection.RoleTool, ToolCallID: "c1", Content: "r", Trust: projection.TrustAgent},
			{Role: projection.RoleUser, Content: "now?", Trust: projection.TrustPeerUntrusted},
		}}}
	var got []string
	if _, err := e.Reply(t.Context(), turn, collect(&got)); err != nil {
		t.Fatalf("Reply() error = %v", err)
	}
	raw := strings.Join(got, "")
	if !strings.HasSuffix(raw, "}\n") {
		t.Errorf("stdin %q: want one JSON object and a newline", raw)
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		t.Fatalf("stdin is not JSON: %v\n%s", err, raw)
	}
	want := map[string]any{
		"contextId": "ctx-1", "taskId": "task-1", "peer": "peer-a", "text": "now?", "prompt": "[Previous]\nuser: hi\n[End]\n\nnow?",
		"request": map[string]any{"system": "Be brief.", "messages": []any{
			map[string]any{"role": "user", "content": "hi", "trust": "PEER_UNTRUSTED"},
			map[string]any{"role": "assistant", "content": "", "trust": "AGENT_GENERATED", "toolCalls": []any{map[string]any{"id": "c1", "name": "f", "arguments": `{"a":1}`}}},
			map[string]any{"role": "tool", "content": "r", "trust": "AGENT_GENERATED", "toolCallId": "c1"},
			map[string]any{"role": "user", "content": "now?", "trust": "PEER_UNTRUSTED"},
		}},
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("stdin JSON (-want +got):\n%s", diff)
	}
}

func TestExecFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		wantMsg string
		wantLog []string
	}{
		{name: "exit 3", command: "printf partial; echo 'secret detail' >&2; exit 3", wantMsg: "exited with status 3", wantLog: []string{"exit_code=3", "secret detail"}},
		{name: "killed by a signal", command: "kill -TERM $$", wantMsg: "killed by signal terminated", wantLog: []string{"signal=terminated"}},
		{name: "no such command", command: "/nonexistent/agent-binary", wantMsg: "exited with status 127", wantLog: []string{"exit_code=127"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, logs := newTestExec(t, ExecConfig{Command: tt.command})
			_, err := e.Reply(t.Context(), Turn{}, func(string) error { return nil })
			if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Reply() error = %v, want %v naming %q", err, ErrBackend, tt.wantMsg)
			}
			if strings.Contains(err.Error(), "secret detail") {
				t.Errorf("error text %q carries the command's stderr", err)
			}
			for _, w := range tt.wantLog {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("log %q: want %q", logs.String(), w)
				}
			}
		})
	}
}

// pidsIn reads the pids a command wrote, one per line, waiting until n are there.
func pidsIn(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	testutil.WaitFor(t, fmt.Sprintf("%d pids in %s", n, path), func() bool {
		b, _ := os.ReadFile(path)
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
		return len(pids) >= n
	})
	return pids
}

// alive reports whether pid is a running process (a zombie waiting for its reaper is not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// assertGone waits for pids to disappear (orphans are reaped asynchronously).
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := testutil.Deadline(t)
	for _, p := range pids {
		if !testutil.Until(deadline, func() bool { return !alive(p) }) {
			t.Errorf("process %d still runs", p)
		}
	}
}

// slowBound tells "ended promptly" from "waited for a 30 s sleep of the script": so far
// from both that a busy machine cannot blur them.
const slowBound = 20 * time.Second

// groupCommand records the shell's pid, a background child's and a grandchild's, then hangs.
const groupCommand = `echo $$ >"$PIDS"; sleep 30 & echo $! >>"$PIDS"; sh -c 'echo $$ >>"$PIDS"; exec sleep 30'`

func TestExecTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	const timeout = time.Second
	e, logs := newTestExec(t, ExecConfig{Command: "printf partial; " + groupCommand, Timeout: timeout, Env: []string{"PIDS=" + pidFile}})
	start := time.Now()
	var got []string
	_, err := e.Reply(t.Context(), Turn{}, collect(&got))
	d := time.Since(start)
	if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "no reply within 1s") || CauseOf(err) != CauseTimeout {
		t.Fatalf("Reply() error = %v (cause %d), want %v naming the timeout, cause CauseTimeout", err, CauseOf(err), ErrBackend)
	}
	if d > slowBound {
		t.Errorf("Reply() took %v, want about %v (at least well before the 30 s sleeps end)", d, timeout)
	}
	if s := strings.Join(got, ""); s != "partial" {
		t.Errorf("reply before the timeout = %q, want %q", s, "partial")
	}
	assertGone(t, pidsIn(t, pidFile, 3))
	if !strings.Contains(logs.String(), "timed out") {
		t.Errorf("log %q: want the timeout", logs.String())
	}
}

func TestExecCancelKillsTheGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		emitErr error
	}{
		{name: "caller cancels"},
		{name: "emit fails", emitErr: errors.New("turn canceled")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pids")
			e, _ := newTestExec(t, ExecConfig{Command: groupCommand + ` & sleep 0.2; printf go; wait`, Timeout: time.Minute, Env: []string{"PIDS=" + pidFile}})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			start := time.Now()
			_, err := e.Reply(ctx, Turn{}, func(string) error {
				pidsIn(t, pidFile, 3)
				cancel()
				return tt.emitErr
			})
			want := tt.emitErr
			if want == nil {
				want = context.Canceled
			}
			if !errors.Is(err, want) {
				t.Fatalf("Reply() error = %v, want %v", err, want)
			}
			if d := time.Since(start); d > slowBound {
				t.Errorf("Reply() took %v, want it to end promptly (at least well before the 30 s sleeps end)", d)
			}
			assertGone(t, pidsIn(t, pidFile, 3))
		})
	}
}

func TestExecLeftoverHoldingOutput(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	// The shell exits at once; its background child keeps stdout open.
	e, logs := newTestExec(t, ExecConfig{Command: `sleep 30 & echo $! >"$PIDS"; printf done`, Env: []string{"PIDS=" + pidFile}})
	start := time.Now()
	var got []string
	if _, err := e.Reply(t.Context(), Turn{}, collect(&got)); err != nil {
		t.Fatalf("Reply() error = %v, want nil", err)
	}
	if d := time.Since(start); d > slowBound {
		t.Errorf("Reply() took %v, want about %v (at least well before the leftover's 30 s sleep ends)", d, execWaitDelay)
	}
	if s := strings.Join(got, ""); s != "done" {
		t.Errorf("reply = %q, want %q", s, "done")
	}
	assertGone(t, pidsIn(t, pidFile, 1))
	if !strings.Contains(logs.String(), "left processes") {
		t.Errorf("log %q: want the leftover named", logs.String())
	}
}

func TestNewExecConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []ExecConfig{{}, {Command: "  "}, {Command: "cat", Input: "xml"}} {
		if _, err := NewExec(cfg, nil); err == nil {
			t.Errorf("NewExec(%+v) error = nil, want one", cfg)
		}
	}
	e, err := NewExec(ExecConfig{Command: "cat"}, nil)
	if err != nil || e.cfg.Input != ExecInputText || e.cfg.Timeout != DefaultTimeout {
		t.Errorf("NewExec(zero fields) = %+v, %v, want text input and the default timeout", e, err)
	}
}
