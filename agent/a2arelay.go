package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
)

// a2aRelayDefaultTimeout bounds a relayed turn when A2ARelayConfig.Timeout is 0.
const a2aRelayDefaultTimeout = 300 * time.Second

// a2aRelayCancelTimeout bounds the best-effort CancelTask sent upstream for a task the
// relay abandons (turn canceled, timed out, stream broken).
const a2aRelayCancelTimeout = 5 * time.Second

// A2ARelayConfig configures an [A2ARelay].
type A2ARelayConfig struct {
	// URL is the upstream agent: its JSON-RPC endpoint, or with Dialect "auto" the base
	// URL its agent card is found under (the card names the endpoint). Required.
	URL string
	// Token is sent upstream as "Authorization: Bearer <Token>". Empty sends none. It is
	// never logged.
	Token string
	// Dialect is the upstream's A2A version: "auto" (or empty) reads the agent card once
	// and prefers 1.0; "1.0"; "0.3".
	Dialect string
	// Timeout bounds a whole turn upstream, from sending the message to the end of the
	// stream. Zero means 300s.
	Timeout time.Duration
	// Input is what the relay sends upstream: "text" (or empty) sends the peer's current
	// message only, since the upstream keeps its own context under the contextId; "prompt"
	// sends the gateway's rendered prompt (prior turns under the boundary, then the
	// current message), for upstreams that keep no context.
	Input string
	// HTTPClient sends the requests. Nil means a client of the relay's own that reaches
	// loopback and private addresses without a proxy (see [a2aclient.Options]).
	HTTPClient *http.Client
	// TracerProvider makes a client span of every upstream call (see
	// [a2aclient.Options]); nil: none. The requests carry the turn's trace context either way.
	TracerProvider trace.TracerProvider
}

// LogValue implements slog.LogValuer: the configuration without the token (only whether
// one is set).
func (c A2ARelayConfig) LogValue() slog.Value {
	u := redactURL(c.URL)
	if c.Token != "" {
		u = strings.ReplaceAll(u, c.Token, "[REDACTED]")
	}
	return slog.GroupValue(slog.String("url", u), slog.Bool("token_set", c.Token != ""),
		slog.String("dialect", c.Dialect), slog.Duration("timeout", c.Timeout), slog.String("input", c.Input))
}

// A2ARelay is the backend that relays each turn to an upstream A2A agent: it sends the
// turn's text as one user message (SendStreamingMessage / message/stream) and emits the
// upstream's reply as it streams in.
//
// Conversation continuity: the message carries the contextId the upstream returned on
// the conversation's previous turn (Turn.UpstreamContextID). On the first turn it
// carries none and the upstream makes one (the relay never invents a contextId: A2A
// servers may refuse unknown ones); Result.UpstreamContextID hands it back to be stored.
// When the upstream's task ends a turn INPUT_REQUIRED, Result.UpstreamTaskID names it and
// the next turn's message carries it (Turn.UpstreamTaskID), which continues that task; if
// the upstream no longer has it (task not found, or it ended meanwhile: -32001 or
// -32004), the message is sent again without it, as a new task in the same context.
//
// What is emitted: the text parts of the upstream's artifacts, in order, each chunk as
// it arrives (appended chunks as they are; an artifact re-sent whole, as in a final Task
// snapshot, only for what it adds to the text already relayed); the text of an agent
// Message when the upstream answers with one; and, when no artifact text came, the text
// of the status message that ends the task (an INPUT_REQUIRED question, say). Non-text
// parts and progress messages of working statuses are not relayed.
//
// It is safe for concurrent use.
type A2ARelay struct {
	client  *a2aclient.Client
	token   string
	url     string // redacted, for the log
	timeout time.Duration
	prompt  bool
	log     *slog.Logger
}

// NewA2ARelay returns an A2A relay backend. logger may be nil (nothing is logged). It
// does no I/O. It returns an error if cfg.URL is not an absolute http(s) URL, Dialect or
// Input has an unknown value, or Timeout is negative.
func NewA2ARelay(cfg A2ARelayConfig, logger *slog.Logger) (*A2ARelay, error) {
	if cfg.URL == "" {
		return nil, errors.New("a2a: an upstream URL is required")
	}
	dialect, err := a2aclient.ParseDialect(cfg.Dialect)
	if err != nil {
		return nil, fmt.Errorf("a2a: %w", err)
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("a2a: the timeout must not be negative")
	}
	r := &A2ARelay{token: cfg.Token, timeout: cfg.Timeout}
	r.url = r.redact(redactURL(cfg.URL))
	switch cfg.Input {
	case "", "text":
	case "prompt":
		r.prompt = true
	default:
		return nil, fmt.Errorf("a2a: unknown input %q: use text or prompt", cfg.Input)
	}
	if r.timeout == 0 {
		r.timeout = a2aRelayDefaultTimeout
	}
	r.client, err = a2aclient.New(cfg.URL, a2aclient.Options{HTTPClient: cfg.HTTPClient, Token: cfg.Token, Dialect: dialect,
		TracerProvider: cfg.TracerProvider})
	if err != nil {
		return nil, fmt.Errorf("a2a: %s", r.redact(err.Error()))
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r.log = logger.With("component", "agent", "backend", "a2a")
	return r, nil
}

// Close releases the idle connections of the relay's own HTTP client. It returns nil.
func (r *A2ARelay) Close() error { return r.client.Close() }

// Reply implements [Agent]. The upstream ending the task FAILED, REJECTED, CANCELED or
// AUTH_REQUIRED, the stream ending before the task did, a JSON-RPC error, a transport
// failure or the timeout return an error wrapping [ErrBackend] with a short safe text
// (the detail is logged at Warn); the caller's cancellation returns ctx's cause, and an
// error from emit is returned as it is. A task the relay abandons while it still runs is
// canceled upstream, best effort. On error, the Result still carries the upstream
// contextId when one was learnt.
func (r *A2ARelay) Reply(ctx context.Context, t Turn, emit Emit) (Result, error) {
	tctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	text := t.Text
	if r.prompt && t.Prompt != "" {
		text = t.Prompt
	}
	run := &relayRun{turn: t, emit: emit, texts: map[string]string{}, contextID: t.UpstreamContextID}
	p := &a2a.SendParams{Message: a2a.Message{
		MessageID: newRelayMessageID(),
		ContextID: t.UpstreamContextID,
		TaskID:    t.UpstreamTaskID,
		Role:      a2a.RoleUser,
		Parts:     []a2a.Part{a2a.TextPart(text)},
	}}
	st, ev, err := r.open(tctx, p)
	if err != nil && t.UpstreamTaskID != "" && (errors.Is(err, a2a.ErrTaskNotFound) || errors.Is(err, a2a.ErrUnsupportedOperation)) {
		r.log.InfoContext(ctx, "the upstream task that asked for input cannot continue; sending as a new task",
			"context_id", t.ContextID, "task_id", t.TaskID, "upstream_task_id", t.UpstreamTaskID, "err", r.redact(err.Error()))
		p.Message.TaskID, p.Message.MessageID = "", newRelayMessageID()
		st, ev, err = r.open(tctx, p)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return run.result(), r.failed(ctx, tctx, t, err)
	}
	if err := r.relay(ctx, tctx, run, st, ev, err); err != nil {
		return run.result(), err
	}
	return r.finish(ctx, run)
}

// a2aRelayResumes bounds how often one turn follows its upstream task again after its
// stream broke.
const a2aRelayResumes = 3

// relay relays the events of st, whose first event (or io.EOF) is ev, err, until the
// stream ends; it closes st. A stream that breaks, or ends before the task did, is
// followed again from the last event relayed (resume); a failure, emit's error included,
// cancels the upstream task and is the turn's error.
func (r *A2ARelay) relay(ctx, tctx context.Context, run *relayRun, st a2a.Stream, ev a2a.Event, err error) error {
	defer func() { st.Close() }()
	for resumes := 0; ; ev, err = st.Next(tctx) {
		broke := errors.Is(err, io.EOF) && !run.ended() ||
			errors.Is(err, a2aclient.ErrTransport) && !errors.Is(err, a2a.ErrInvalidAgentResponse)
		if broke && resumes < a2aRelayResumes {
			if next := r.resume(ctx, tctx, run, err); next != nil {
				resumes++
				st.Close()
				st = next
				continue
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			st.Close()
			r.cancelUpstream(ctx, run)
			return r.failed(ctx, tctx, run.turn, err)
		case ev.Seq > 0 && ev.Seq <= run.lastSeq:
			continue // relayed before the stream broke
		}
		run.lastSeq = max(run.lastSeq, ev.Seq)
		if err := run.apply(ev); err != nil { // emit's error: the turn is over
			st.Close()
			r.cancelUpstream(ctx, run)
			return err
		}
	}
}

// resume follows the upstream task again after its stream broke (err): SubscribeToTask
// with the seq of the last event relayed (Last-Event-ID), so that the upstream replays
// what was missed. Only a task whose events are numbered (SSE ids) is followed again: an
// upstream that does not number them cannot say where to resume, and a gap would go
// unnoticed. nil: not followed.
func (r *A2ARelay) resume(ctx, tctx context.Context, run *relayRun, err error) a2a.Stream {
	if run.taskID == "" || run.lastSeq == 0 || run.message || tctx.Err() != nil {
		return nil
	}
	st, serr := r.client.SubscribeToTask(tctx, &a2a.SubscribeParams{ID: run.taskID, AfterSeq: run.lastSeq})
	attrs := []any{"context_id", run.turn.ContextID, "task_id", run.turn.TaskID, "upstream", r.url,
		"upstream_task_id", run.taskID, "after_seq", run.lastSeq, "err", r.redact(errText(err))}
	if serr != nil {
		r.log.WarnContext(ctx, "the upstream stream broke and its task could not be followed again", append(attrs, "subscribe_err", r.redact(serr.Error()))...)
		return nil
	}
	r.log.InfoContext(ctx, "the upstream stream broke; following its task again", attrs...)
	return st
}

// errText is err's text, "end of stream" for io.EOF.
func errText(err error) string {
	if errors.Is(err, io.EOF) {
		return "end of stream"
	}
	return err.Error()
}

// open sends p as a streaming message and reads the stream's first event, where an
// upstream that refuses the message reports its JSON-RPC error. It returns the open
// stream with that event or io.EOF (an empty stream); on any other error nothing is left
// open.
func (r *A2ARelay) open(ctx context.Context, p *a2a.SendParams) (a2a.Stream, a2a.Event, error) {
	st, err := r.client.SendStreamingMessage(ctx, p)
	if err != nil {
		return nil, a2a.Event{}, err
	}
	ev, err := st.Next(ctx)
	if err != nil && !errors.Is(err, io.EOF) {
		st.Close()
		return nil, a2a.Event{}, err
	}
	return st, ev, err
}

// finish turns the upstream's last state into the turn's outcome.
func (r *A2ARelay) finish(ctx context.Context, run *relayRun) (Result, error) {
	res := run.result()
	if run.message {
		return res, nil
	}
	var why string
	switch run.state {
	case a2a.StateCompleted:
		return res, nil
	case a2a.StateInputRequired:
		res.InputRequired = true
		return res, nil
	case a2a.StateFailed:
		why = "the upstream task failed"
	case a2a.StateRejected:
		why = "the upstream agent rejected the task"
	case a2a.StateCanceled:
		why = "the upstream task was canceled"
	case a2a.StateAuthRequired:
		why = "the upstream agent requires authorization"
	default:
		why = "the upstream stream ended before the task finished"
		r.cancelUpstream(ctx, run)
	}
	r.log.WarnContext(ctx, "upstream task did not complete", "context_id", run.turn.ContextID, "task_id", run.turn.TaskID,
		"upstream", r.url, "upstream_context_id", run.contextID, "upstream_task_id", run.taskID, "state", string(run.state))
	return res, relayError("%s", why)
}

// failed logs a failed call and returns the turn's error: the caller's cancellation as
// it is, the timeout and anything else as a short ErrBackend error.
func (r *A2ARelay) failed(ctx, tctx context.Context, t Turn, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	attrs := []any{"context_id", t.ContextID, "task_id", t.TaskID, "upstream", r.url}
	if tctx.Err() != nil {
		r.log.WarnContext(ctx, "upstream reply timed out", append(attrs, "timeout", r.timeout)...)
		return withCause(CauseTimeout, relayError("no complete reply within %s", r.timeout))
	}
	var re *a2aclient.RemoteError
	switch {
	case errors.As(err, &re) && !errors.Is(err, a2aclient.ErrTransport):
		r.log.WarnContext(ctx, "upstream answered with an error", append(attrs, "code", re.Code, "reason", re.Reason,
			"error_message", r.redact(truncateRunes(re.Message, 512)))...)
		return relayError("the upstream agent answered JSON-RPC error %d", re.Code)
	case errors.Is(err, a2a.ErrInvalidAgentResponse):
		r.log.WarnContext(ctx, "upstream sent an invalid answer", append(attrs, "err", r.redact(err.Error()))...)
		return relayError("the upstream agent sent an invalid answer")
	case errors.Is(err, a2aclient.ErrTransport):
		r.log.WarnContext(ctx, "upstream call failed", append(attrs, "err", r.redact(err.Error()))...)
		return relayError("the upstream agent could not be reached or refused the request")
	}
	r.log.WarnContext(ctx, "relaying the turn failed", append(attrs, "err", r.redact(err.Error()))...)
	return relayError("the request could not be sent")
}

// cancelUpstream cancels, best effort, an upstream task that may still be running.
func (r *A2ARelay) cancelUpstream(ctx context.Context, run *relayRun) {
	if run.taskID == "" || run.state.Terminal() || run.state.Interrupted() {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a2aRelayCancelTimeout)
	defer cancel()
	if _, err := r.client.CancelTask(cctx, &a2a.TaskIDParams{ID: run.taskID}); err != nil {
		r.log.DebugContext(ctx, "canceling the abandoned upstream task failed", "context_id", run.turn.ContextID,
			"task_id", run.turn.TaskID, "upstream_task_id", run.taskID, "err", r.redact(err.Error()))
	}
}

// CancelUpstream implements [UpstreamCanceler]: CancelTask upstream, bounded by ctx and
// 5 seconds. An upstream that no longer has the task, or cannot cancel it because it
// ended, answers nil; any other failure is logged at Warn and returned as an error
// wrapping [ErrBackend].
func (r *A2ARelay) CancelUpstream(ctx context.Context, upstreamTaskID string) error {
	cctx, cancel := context.WithTimeout(ctx, a2aRelayCancelTimeout)
	defer cancel()
	_, err := r.client.CancelTask(cctx, &a2a.TaskIDParams{ID: upstreamTaskID})
	if err == nil || errors.Is(err, a2a.ErrTaskNotFound) || errors.Is(err, a2a.ErrTaskNotCancelable) {
		return nil
	}
	r.log.WarnContext(ctx, "canceling the upstream task failed", "upstream", r.url, "upstream_task_id", upstreamTaskID,
		"err", r.redact(err.Error()))
	return relayError("the upstream task could not be canceled")
}

func (r *A2ARelay) redact(s string) string {
	if r.token == "" {
		return s
	}
	return strings.ReplaceAll(s, r.token, "[REDACTED]")
}

// relayRun is the state of one relayed turn.
type relayRun struct {
	turn      Turn
	emit      Emit
	texts     map[string]string // artifactId → its text relayed so far
	emitted   bool              // any text was emitted
	contextID string            // the upstream's contextId (the one sent until it answers)
	taskID    string            // the upstream task, once known
	state     a2a.TaskState     // the upstream task's last state
	message   bool              // the upstream answered with a Message, not a task
	lastSeq   uint64            // the seq (SSE id) of the last event relayed; 0: none numbered
}

// ended reports whether the upstream's answer is complete: a Message, or a task in a
// state that ends its stream.
func (run *relayRun) ended() bool { return run.message || run.state.EndsStream() }

func (run *relayRun) result() Result {
	res := Result{UpstreamContextID: run.contextID}
	if run.state == a2a.StateInputRequired && !run.message {
		res.UpstreamTaskID = run.taskID
	}
	return res
}

// apply relays one event; its error is emit's.
func (run *relayRun) apply(ev a2a.Event) error {
	switch {
	case ev.Task != nil:
		t := ev.Task
		run.note(t.ID, t.ContextID)
		for i := range t.Artifacts {
			if err := run.artifact(&t.Artifacts[i], false); err != nil {
				return err
			}
		}
		return run.status(&t.Status)
	case ev.Status != nil:
		run.note(ev.Status.TaskID, ev.Status.ContextID)
		return run.status(&ev.Status.Status)
	case ev.Artifact != nil:
		run.note(ev.Artifact.TaskID, ev.Artifact.ContextID)
		return run.artifact(&ev.Artifact.Artifact, ev.Artifact.Append)
	case ev.Message != nil:
		m := ev.Message
		if m.ContextID != "" {
			run.contextID = m.ContextID
		}
		if run.taskID == "" {
			run.message = true // a message-only answer: the interaction is over
		}
		if m.Role == a2a.RoleAgent {
			return run.out(m.Text())
		}
	}
	return nil
}

func (run *relayRun) note(taskID, contextID string) {
	if run.taskID == "" {
		run.taskID = taskID
	}
	if contextID != "" {
		run.contextID = contextID
	}
}

// status records a task status; the message of a status that ends the task is the reply
// when no artifact text came.
func (run *relayRun) status(s *a2a.TaskStatus) error {
	run.state = s.State
	if s.Message != nil && !run.emitted && (s.State == a2a.StateCompleted || s.State == a2a.StateInputRequired) {
		return run.out(s.Message.Text())
	}
	return nil
}

// artifact relays what an artifact adds to the text relayed so far for its id: an
// appended chunk as it is, a whole artifact for what follows the relayed prefix. A
// replaced text cannot be taken back (the reply is append-only); the rest of it is
// dropped.
func (run *relayRun) artifact(a *a2a.Artifact, appended bool) error {
	text := a2a.PartsText(a.Parts)
	prev, seen := run.texts[a.ArtifactID]
	full := text
	if appended && seen {
		full = prev + text
	}
	run.texts[a.ArtifactID] = full
	rest, ok := strings.CutPrefix(full, prev)
	if !ok {
		return nil
	}
	return run.out(rest)
}

func (run *relayRun) out(s string) error {
	if s == "" {
		return nil
	}
	run.emitted = true
	return run.emit(s)
}

// relayError is the turn's error for a failure: short, fixed text safe to show a peer,
// wrapping ErrBackend (the same shape as the other backends' errors).
func relayError(format string, args ...any) error {
	return fmt.Errorf("a2a: %s: %w", fmt.Sprintf(format, args...), ErrBackend)
}

// newRelayMessageID returns a random UUID (version 4) for an upstream message.
func newRelayMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// redactURL returns raw with any password in it replaced, for logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// truncateRunes shortens s to at most n bytes without splitting a character.
func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = strings.ToValidUTF8(s[:n], "")
	return s + "…"
}
