package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/internal/tracing"
)

// Exec input formats (ExecConfig.Input).
const (
	ExecInputText = "text" // stdin is Turn.Prompt, as it is (no newline added)
	ExecInputJSON = "json" // stdin is one [ExecInput] object, then a newline
)

const (
	execChunkMax  = 4 << 10         // the largest reply chunk the backend emits
	execStderrMax = 8 << 10         // how much of the command's stderr (its end) is kept for the log
	execWaitDelay = 2 * time.Second // how long output may stay open after the command exits or is killed
)

// ExecConfig configures an [Exec] backend.
type ExecConfig struct {
	// Command is a shell command line, run as `sh -c Command` once per turn. Required.
	Command string
	// Input selects what the command reads on stdin: [ExecInputText] (or empty), or
	// [ExecInputJSON].
	Input string
	// Timeout bounds one run; when it passes, the command's whole process group is killed.
	// Zero means [DefaultTimeout].
	Timeout time.Duration
	// Env holds extra KEY=value variables for the command, added to the gateway's own
	// environment. GATEWAY_CONTEXT_ID, GATEWAY_TASK_ID and GATEWAY_PEER are always set, and
	// win over both; so are TRACEPARENT (and TRACESTATE) when the turn's ctx is traced
	// (W3C trace context, for a command that makes spans of its own).
	Env []string
}

// ExecInput is what an [Exec] command reads on stdin with [ExecInputJSON].
type ExecInput struct {
	ContextID string      `json:"contextId"`
	TaskID    string      `json:"taskId"`
	Peer      string      `json:"peer"`   // the authenticated peer ("local" when none)
	Text      string      `json:"text"`   // the current message's text
	Prompt    string      `json:"prompt"` // what the text input would be: prior turns, then the message
	Request   ExecRequest `json:"request"`
}

// ExecRequest is the turn's provider-neutral request in [ExecInput]: the instruction stack
// as system, then the messages, the current message last.
type ExecRequest struct {
	System   string        `json:"system"`
	Messages []ExecMessage `json:"messages"`
}

// ExecMessage is one message of an [ExecRequest].
type ExecMessage struct {
	Role       string         `json:"role"` // user, assistant or tool
	Content    string         `json:"content"`
	Trust      string         `json:"trust,omitempty"` // PEER_UNTRUSTED, OPERATOR_TRUSTED, AGENT_GENERATED, SYSTEM
	ToolCalls  []ExecToolCall `json:"toolCalls,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
}

// ExecToolCall is a tool invocation of an assistant [ExecMessage].
type ExecToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text
}

// Exec is the backend that runs a command per turn: `sh -c Command` in a process group of
// its own, with the turn on stdin and GATEWAY_CONTEXT_ID, GATEWAY_TASK_ID and GATEWAY_PEER
// in its environment. Its stdout is the reply, streamed as it is read, in chunks of at most
// 4 KiB that never split a UTF-8 character. A reply that begins with
// [InputRequiredMarker] ends the task INPUT_REQUIRED (marker removed). The end of stderr
// is kept for the log only. It is safe for concurrent use.
type Exec struct {
	cfg ExecConfig
	log *slog.Logger
}

// NewExec returns an Exec backend. logger may be nil (nothing is logged). It returns an
// error if cfg.Command is empty or cfg.Input is not one of the formats.
func NewExec(cfg ExecConfig, logger *slog.Logger) (*Exec, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, errors.New("exec: a command is required")
	}
	switch cfg.Input {
	case "":
		cfg.Input = ExecInputText
	case ExecInputText, ExecInputJSON:
	default:
		return nil, fmt.Errorf("exec: input %q: want %q or %q", cfg.Input, ExecInputText, ExecInputJSON)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.Env = append([]string(nil), cfg.Env...)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Exec{cfg: cfg, log: logger.With("component", "agent", "backend", "exec")}, nil
}

// Reply implements [Agent]. It runs the command once and waits for it: when Reply returns,
// the command has exited, and whatever remained of its process group has been killed.
// Failures return an error wrapping [ErrBackend] whose text is safe to show a peer (it
// names the exit status, never the command's output); the detail, with the end of stderr,
// is logged at Warn: the command cannot start, exits non-zero or dies of a signal, or runs
// past the Timeout (its process group is then killed). The caller's cancellation kills the
// process group too and returns ctx's error; an error from emit kills it and is returned as
// it is.
func (e *Exec) Reply(ctx context.Context, t Turn, emit Emit) (Result, error) {
	stdin, err := e.input(t)
	if err != nil {
		e.log.WarnContext(ctx, "encoding the command's input failed", "context_id", t.ContextID, "task_id", t.TaskID, "err", err)
		return Result{}, backendError("exec", "the turn cannot be encoded for the command")
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	f := newMarkerFilter(emit)
	out := &utf8Chunker{emit: f.write, max: execChunkMax, onErr: cancel}
	stderr := &tailBuffer{max: execStderrMax}

	cmd := exec.CommandContext(rctx, "sh", "-c", e.cfg.Command)
	cmd.Env = append(append(os.Environ(), e.cfg.Env...),
		"GATEWAY_CONTEXT_ID="+t.ContextID, "GATEWAY_TASK_ID="+t.TaskID, "GATEWAY_PEER="+t.Peer)
	cmd.Env = append(cmd.Env, tracing.Env(ctx)...) // TRACEPARENT, TRACESTATE: the turn's trace
	if te, ok := t.Tools.(ToolEnv); ok {
		cmd.Env = append(cmd.Env, te.Env()...)
	}
	// The copying goroutines exec starts for these end before cmd.Wait returns.
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = out
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = execWaitDelay

	start := time.Now()
	if err := cmd.Start(); err != nil {
		if perr := ctx.Err(); perr != nil {
			return Result{}, perr
		}
		e.log.WarnContext(ctx, "starting the command failed", "context_id", t.ContextID, "task_id", t.TaskID, "err", err)
		return Result{}, backendError("exec", "the command could not be started")
	}
	waitErr := cmd.Wait()
	_ = killGroup(cmd.Process.Pid) // leftovers that outlived the shell

	if out.err != nil {
		return Result{}, out.err
	}
	if perr := ctx.Err(); perr != nil {
		return Result{}, perr
	}
	if err := e.outcome(ctx, rctx, t, cmd.ProcessState, waitErr, stderr, time.Since(start)); err != nil {
		return Result{}, err
	}
	if err := out.flush(); err != nil {
		return Result{}, err
	}
	found, err := f.finish()
	return Result{InputRequired: found}, err
}

// outcome logs how the command ended and returns the turn's error, nil when it succeeded
// (rctx is the run's context, bounded by the timeout).
func (e *Exec) outcome(ctx, rctx context.Context, t Turn, st *os.ProcessState, waitErr error, stderr *tailBuffer, elapsed time.Duration) error {
	attrs := []any{"context_id", t.ContextID, "task_id", t.TaskID, "elapsed", elapsed}
	switch {
	case st != nil && st.Success():
		if errors.Is(waitErr, exec.ErrWaitDelay) {
			e.log.WarnContext(ctx, "command exited but left processes holding its output; killed them", attrs...)
		} else if waitErr != nil {
			e.log.WarnContext(ctx, "reading the command's output failed", append(attrs, "err", waitErr, "stderr", stderr.String())...)
			return backendError("exec", "the command's output could not be read")
		}
		if stderr.Len() > 0 {
			e.log.DebugContext(ctx, "command wrote to stderr", append(attrs, "stderr", stderr.String())...)
		}
		return nil
	case rctx.Err() != nil:
		e.log.WarnContext(ctx, "command timed out; killed its process group", append(attrs, "timeout", e.cfg.Timeout, "stderr", stderr.String())...)
		return withCause(CauseTimeout, backendError("exec", "no reply within %s; the command was killed", e.cfg.Timeout))
	case st == nil:
		e.log.WarnContext(ctx, "waiting for the command failed", append(attrs, "err", waitErr, "stderr", stderr.String())...)
		return backendError("exec", "the command failed")
	}
	attrs = append(attrs, "stderr", stderr.String())
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.log.WarnContext(ctx, "command killed by a signal", append(attrs, "signal", ws.Signal().String())...)
		return backendError("exec", "the command was killed by signal %s", ws.Signal())
	}
	e.log.WarnContext(ctx, "command failed", append(attrs, "exit_code", st.ExitCode())...)
	return backendError("exec", "the command exited with status %d", st.ExitCode())
}

// input is what the command reads on stdin for t.
func (e *Exec) input(t Turn) ([]byte, error) {
	prompt := promptText(t)
	if e.cfg.Input == ExecInputText {
		return []byte(prompt), nil
	}
	r := chatRequest(t)
	in := ExecInput{ContextID: t.ContextID, TaskID: t.TaskID, Peer: t.Peer, Text: t.Text, Prompt: prompt,
		Request: ExecRequest{System: r.System, Messages: make([]ExecMessage, 0, len(r.Messages))}}
	for _, m := range r.Messages {
		em := ExecMessage{Role: string(m.Role), Content: m.Content, Trust: string(m.Trust), ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			em.ToolCalls = append(em.ToolCalls, ExecToolCall(c))
		}
		in.Request.Messages = append(in.Request.Messages, em)
	}
	b, err := json.Marshal(in)
	return append(b, '\n'), err
}

// killGroup sends SIGKILL to the process group pgid leads. A group already gone is
// reported as os.ErrProcessDone.
func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// utf8Chunker is the command's stdout: it emits what it is given in chunks of at most max
// bytes, never splitting a UTF-8 character (an incomplete sequence at the end of a write
// waits for the next one). After emit fails it calls onErr once and refuses more output.
type utf8Chunker struct {
	emit    Emit
	max     int
	onErr   func()
	pending []byte // an incomplete UTF-8 sequence (at most 3 bytes)
	err     error  // emit's error
}

func (w *utf8Chunker) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	data := p
	if len(w.pending) > 0 {
		data = append(append(make([]byte, 0, len(w.pending)+len(p)), w.pending...), p...)
	}
	cut := len(data) - incompleteTail(data)
	if err := w.send(data[:cut]); err != nil {
		return 0, err
	}
	w.pending = append(w.pending[:0], data[cut:]...)
	return len(p), nil
}

// flush emits the bytes held back at the end of the output (an invalid sequence).
func (w *utf8Chunker) flush() error {
	if w.err != nil {
		return w.err
	}
	p := w.pending
	w.pending = nil
	return w.send(p)
}

func (w *utf8Chunker) send(b []byte) error {
	for len(b) > 0 {
		n := len(b)
		if n > w.max {
			n = w.max
			for i := n; i > 0 && i > w.max-utf8.UTFMax; i-- {
				if utf8.RuneStart(b[i]) {
					n = i
					break
				}
			}
		}
		if err := w.emit(string(b[:n])); err != nil {
			w.err = err
			w.onErr()
			return err
		}
		b = b[n:]
	}
	return nil
}

// incompleteTail is the length of the incomplete UTF-8 sequence b ends with (0 if none).
func incompleteTail(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) Len() int { return len(t.buf) }

// String is the kept text, valid UTF-8 (a character cut at the start is dropped).
func (t *tailBuffer) String() string {
	b := t.buf
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
