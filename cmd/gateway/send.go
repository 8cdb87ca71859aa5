package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/internal/telemetry"
	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
)

const sendUsage = `Usage: gateway send [flags] TARGET [MESSAGE | -]
       gateway send --list [--json]

Sends MESSAGE to a peer agent over A2A and streams its reply to standard output as it
arrives. With MESSAGE "-" or absent, the message is read from standard input. The line
"context: <contextId>  task: <taskId>" goes to standard error: give that contextId as
TARGET (or --context) to continue the conversation.

TARGET (one leading "a2a:" is ignored: a2a:macmini and macmini are the same):
  NAME        a peer of the config file's peers: list (one with a url); case-insensitive,
              and a unique prefix will do (an ambiguous prefix lists the candidates)
  URL         http(s)://host[:port]/path of an A2A agent that is not in the config; the
              token of a configured peer with the same url is used
  CONTEXT_ID  a conversation an earlier send started: continues it with its peer; or one
              that a caller without a token started with the local gateway (peer
              "local" in 'gateway conversations list'): continues it there, at --server
              (the gateway records the turn itself). A conversation that a peer with a
              token started is that peer's: only it can continue it.
They are tried in that order, except that a prefix is tried last. 'gateway send --list'
prints every target, each exactly as TARGET accepts it; a conversation whose contextId
is taken by a name or URL is continued with 'gateway send PEER --context CONTEXT_ID'.

Outbound conversations are recorded in the local gateway's ledger under the peer
"out:<name>" (or "out:<url>"), so that 'gateway conversations list' shows them and a
later send continues them. The exchange is recorded only once the peer has answered,
through the gateway's admin API at --server or, when no gateway answers there, in
--data-dir directly (one process may hold it at a time). Recording through the admin API
is a write, which needs the gateway's admin token even on loopback: --admin-token, or,
when the gateway runs without one, the token it wrote to admin.token in its data dir
(readable by its user only), read from --data-dir when --server is a loopback address.
Without a token a running gateway accepts, send refuses before sending anything.

Hosts that are loopback, private (RFC 1918, IPv6 ULA), link-local or CGNAT
(100.64.0.0/10, Tailscale) are reached directly; others honour HTTP(S)_PROXY/NO_PROXY.

Exit status:
  0  the peer replied (a warning on stderr if the exchange could not be recorded)
  1  the peer could not be reached, answered an error (its JSON-RPC code and message are
     printed; -32004 CONTEXT_BUSY: another task runs in that context, retry later), or
     its task failed; the local gateway or its ledger could not be read; nothing is
     recorded
  2  usage error, including an unknown or ambiguous target

Flags:
`

const (
	// maxSendMessage bounds a message read from standard input.
	maxSendMessage = 4 << 20
	// listCardTimeout bounds each peer's agent card fetch of --list (--timeout if shorter).
	listCardTimeout = 5 * time.Second
	// storeProbeTimeout bounds the first call to the local gateway's admin API.
	storeProbeTimeout = 3 * time.Second
)

// sendOptions are the flags of `gateway send`.
type sendOptions struct {
	ops       opsFlags
	contextID string
	newConv   bool
	messageID string
	dialect   string
	timeout   time.Duration
	list      bool
	asJSON    bool
}

// runSend is `gateway send`.
func runSend(ctx context.Context, args []string, lookup func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	cmd, err := parseSend(args, lookup, stdout)
	if err != nil {
		return err
	}
	if url, token, ok := turnToken(lookup); ok {
		// inside an exec agent's turn, whose trace the environment carries
		getenv := func(k string) string { v, _ := lookup(k); return v }
		return cmd.sendAsTurn(tracing.FromEnv(ctx, getenv), url, token, stdin, stdout)
	}
	store, err := openSendStore(ctx, cmd.o.ops, stderr)
	if err != nil {
		return err
	}
	dir, err := sendDirectory(ctx, cmd.peerList, store, cmd.o.ops.server)
	if err != nil {
		return err
	}
	if cmd.o.list {
		return sendList(ctx, dir, cmd.o.ops.config, min(cmd.o.timeout, listCardTimeout), cmd.o.asJSON, stdout, stderr)
	}
	ctx, tel, end := sendTracing(ctx, lookup, stderr)
	defer end()
	cmd.tel = tel
	return cmd.send(ctx, dir, store, stdin, stdout, stderr)
}

// sendCommand is one `gateway send` command line, parsed.
type sendCommand struct {
	o          sendOptions
	peerList   []Peer
	positional []string
	dialect    a2a.Dialect
	tel        telemetry.Tracing // the send's spans (Provider nil: none)
}

// parseSend parses send's command line; --help prints the help on stdout (flag.ErrHelp);
// usage errors are a *flagError or a usageError.
func parseSend(args []string, lookup func(string) (string, bool), stdout io.Writer) (*sendCommand, error) {
	fs := newFlagSet("send")
	cmd := &sendCommand{}
	o := &cmd.o
	e, cf := bindClientConfig(fs, lookup, args)
	o.ops.config = cf
	// The peers: list's problems (a token variable that is not set) are reported after
	// the flags, as the file's: --help prints the help whatever the configuration.
	var err error
	if cmd.peerList, err = cf.peers(lookup); err != nil {
		e.errs = append(e.errs, err)
	}
	fs.StringVar(&o.contextID, "context", "", "continue the conversation with this contextId (TARGET is then its peer)")
	fs.BoolVar(&o.newConv, "new", false, "start a new conversation, even when TARGET is a contextId (then: with its peer)")
	fs.StringVar(&o.dialect, "dialect", "auto", "A2A dialect: auto (from the peer's agent card), 1.0 or 0.3")
	fs.StringVar(&o.messageID, "message-id", "", "send the message under this messageId (default: a new UUID); a send that failed after it may have arrived prints the one it used, to send the same MESSAGE again with it and --context: a peer that deduplicates by messageId (this gateway does) answers with the task it ran instead of running a second turn")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "the longest the whole exchange may take, the streamed reply included")
	fs.BoolVar(&o.list, "list", false, "list the targets: configured peers (and whether their agent card answers) and known conversations")
	fs.BoolVar(&o.asJSON, "json", false, "with --list: print JSON")
	e.String(&o.ops.server, "server", "http://127.0.0.1:9900", "the local gateway whose ledger records the conversation (its admin API)")
	e.String(&o.ops.token, "admin-token", "", "admin token of that gateway (default: the one it wrote to --data-dir's admin.token)")
	e.String(&o.ops.dataDir, "data-dir", "./data", "ledger directory to use directly when no gateway answers at --server")
	help := func() {
		fmt.Fprint(stdout, sendUsage)
		printFlags(stdout, fs)
	}
	if cmd.positional, err = parseFlags(fs, "send", args, true, help); err != nil {
		return nil, err
	}
	if err := errors.Join(e.errs...); err != nil {
		return nil, usageError{err.Error()}
	}
	if cmd.dialect, err = a2aclient.ParseDialect(o.dialect); err != nil {
		return nil, usageError{"--dialect: " + err.Error()}
	}
	return cmd, o.check(cmd.positional)
}

// check reports flags and arguments that do not go together.
func (o *sendOptions) check(positional []string) error {
	switch {
	case o.timeout <= 0:
		return usageError{"--timeout must be positive"}
	case o.list && (len(positional) > 0 || o.contextID != "" || o.newConv):
		return usageError{"--list takes no TARGET, MESSAGE, --context or --new"}
	case o.asJSON && !o.list:
		return usageError{"--json goes with --list"}
	case !o.list && len(positional) == 0:
		return usageError{"send needs a TARGET; 'gateway send --list' shows them"}
	case len(positional) > 2:
		return usageError{fmt.Sprintf("send takes TARGET and one MESSAGE, got %d arguments; quote a message of several words", len(positional))}
	case o.newConv && o.contextID != "":
		return usageError{"--new and --context exclude each other"}
	case len(o.messageID) > ledger.MaxIDBytes:
		return usageError{fmt.Sprintf("--message-id: at most %d bytes (got %d)", ledger.MaxIDBytes, len(o.messageID))}
	case o.list && o.messageID != "":
		return usageError{"--list takes no --message-id"}
	}
	var ce *contextid.Error
	if err := contextid.Validate(o.contextID); o.contextID != "" && errors.As(err, &ce) {
		return usageError{"--context: " + ce.Error()}
	}
	return nil
}

// target resolves TARGET (and --context, --new) to the peer, the contextId to send in
// ("" for a new conversation) and the owner the exchange is recorded under.
func (cmd *sendCommand) target(dir *peers.Directory) (tg peers.Target, contextID, owner string, err error) {
	target := cmd.positional[0]
	if tg, err = dir.Resolve(target); err != nil {
		return tg, "", "", cmd.targetUsageError(dir, target, err)
	}
	contextID, owner = cmd.o.contextID, tg.Owner
	if tg.Kind == peers.KindConversation || tg.Kind == peers.KindLocal {
		switch {
		case cmd.o.newConv:
			owner = peers.Owner(tg.Peer())
		case cmd.o.contextID != "" && cmd.o.contextID != tg.ContextID:
			return tg, "", "", usageError{fmt.Sprintf("TARGET %q continues conversation %q but --context says %q; give one of them", target, tg.ContextID, cmd.o.contextID)}
		default:
			contextID = tg.ContextID
		}
	}
	return tg, contextID, owner, nil
}

// send delivers the message, streams the reply to stdout and records the exchange.
func (cmd *sendCommand) send(ctx context.Context, dir *peers.Directory, store sendStore, stdin io.Reader, stdout, stderr io.Writer) error {
	tg, contextID, owner, err := cmd.target(dir)
	if err != nil {
		return err
	}
	text, err := sendMessageText(cmd.positional, stdin)
	if err != nil {
		return err
	}
	msg := a2a.Message{MessageID: cmd.o.messageID, ContextID: contextID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}
	if msg.MessageID == "" {
		msg.MessageID = uuid.NewString()
	}
	out, reply, err := cmd.deliver(ctx, tg, msg, stdout, stderr)
	if err != nil {
		cmd.retryHint(stderr, tg, msg.MessageID, out.contextID, err)
		return err
	}
	switch {
	case out.contextID == "":
		fmt.Fprintln(stderr, "gateway: warning: the peer's reply names no contextId, so the exchange was not recorded and cannot be continued")
		return nil
	case contextID != "" && out.contextID != contextID:
		fmt.Fprintf(stderr, "gateway: warning: the peer answered in context %q, not %q: it started a new conversation\n", out.contextID, contextID)
	}
	if tg.Kind == peers.KindLocal && owner == tg.Owner {
		return nil // the local gateway recorded the turn in its own conversation
	}
	peer, _ := peers.PeerOfOwner(owner)
	rec := conversations.OutboundRecord{
		Peer: peer, PeerURL: tg.URL, ContextID: out.contextID, RemoteTaskID: out.taskID, State: string(out.finalState()),
		MessageID: msg.MessageID, Text: text, ReplyMessageID: out.replyMessageID, Reply: reply,
	}
	// The peer has answered: the record is made even if ctx is canceled now.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	if _, err := store.RecordOutbound(rctx, rec); err != nil {
		continueHint := fmt.Sprintf("gateway send %s --context %s", shellQuote(peerArg(tg)), shellQuote(out.contextID))
		fmt.Fprintf(stderr, "gateway: warning: the exchange was NOT recorded in the local ledger (%v), so it cannot be continued by its contextId alone; continue it with: %s MESSAGE\n", err, continueHint)
	}
	return nil
}

// deliver sends msg to tg and streams the reply to stdout; it returns what the peer
// answered and the reply as the ledger keeps it. The "context: … task: …" line goes to
// stderr.
func (cmd *sendCommand) deliver(ctx context.Context, tg peers.Target, msg a2a.Message, stdout, stderr io.Writer) (sendOutcome, string, error) {
	tr := peers.NewTransport()
	defer tr.CloseIdleConnections()
	client, err := a2aclient.New(tg.URL, a2aclient.Options{HTTPClient: &http.Client{Transport: tr}, Token: tg.Token, Dialect: cmd.dialect, Timeout: cmd.o.timeout,
		TracerProvider: cmd.tel.Provider})
	if err != nil {
		return sendOutcome{}, "", fmt.Errorf("peer %s: %w", tg.Peer(), err)
	}
	sctx, cancel := context.WithTimeout(ctx, cmd.o.timeout)
	defer cancel()
	rw := newReplyWriter(stdout)
	out, err := exchange(sctx, client, &a2a.SendParams{Message: msg}, rw)
	rw.finish()
	if err == nil {
		err = out.check()
	}
	if out.contextID != "" {
		fmt.Fprintf(stderr, "context: %s  task: %s\n", out.contextID, dash(out.taskID))
	}
	if err != nil {
		return out, "", deliveryError(ctx, sctx, tg, cmd.o.timeout, err)
	}
	if rw.err != nil {
		return out, "", fmt.Errorf("writing the reply: %w", rw.err)
	}
	if out.state.Interrupted() {
		fmt.Fprintf(stderr, "gateway: the peer waits for more input (%s): reply with 'gateway send %s MESSAGE'\n", out.state, shellQuote(out.contextID))
	}
	return out, rw.recorded(), nil
}

// retryHint tells, after a delivery that failed where the peer may have stored the
// message (no JSON-RPC answer: the connection, the timeout or an interruption), how to
// send the same message again so that a peer that deduplicates by messageId does not run
// it twice. Only when the peer named the conversation: a message sent again without its
// contextId would start another.
func (cmd *sendCommand) retryHint(stderr io.Writer, tg peers.Target, messageID, contextID string, err error) {
	var re *a2aclient.RemoteError
	if contextID == "" || errors.As(err, &re) || errors.Is(err, errTaskEnded) {
		return
	}
	fmt.Fprintf(stderr, "gateway: the message may have reached the peer as messageId %s; to send it again without a second turn (on a peer that deduplicates by messageId, as this gateway does): gateway send %s --context %s --message-id %s MESSAGE\n",
		messageID, shellQuote(peerArg(tg)), shellQuote(contextID), shellQuote(messageID))
}

// sendMessageText returns the MESSAGE argument, or standard input for "-" or none.
func sendMessageText(positional []string, stdin io.Reader) (string, error) {
	var text string
	if len(positional) == 2 && positional[1] != "-" {
		text = positional[1]
	} else {
		b, err := io.ReadAll(io.LimitReader(stdin, maxSendMessage+1))
		if err != nil {
			return "", fmt.Errorf("reading the message from standard input: %w", err)
		}
		if len(b) > maxSendMessage {
			return "", usageError{fmt.Sprintf("the message on standard input exceeds %d bytes", maxSendMessage)}
		}
		text = strings.TrimRight(string(b), "\r\n")
	}
	if strings.TrimSpace(text) == "" {
		return "", usageError{"the message is empty"}
	}
	return text, nil
}

// targetUsageError explains a TARGET that resolves to nothing usable (exit 2). hint, when
// not empty, is appended to an unknown target's error: that no config file was read, so
// no configured peer could match.
func targetUsageError(target string, err error, hint string) error {
	var amb *peers.AmbiguousError
	switch {
	case errors.As(err, &amb) && amb.ContextID != "":
		return usageError{fmt.Sprintf("target %q is ambiguous: contextId %q is known with the peers %s; choose one with 'gateway send PEER --context %s'",
			target, amb.ContextID, strings.Join(amb.Candidates, ", "), shellQuote(amb.ContextID))}
	case errors.As(err, &amb):
		return usageError{fmt.Sprintf("target %q is ambiguous: it is a prefix of the peers %s; type more of the name ('gateway send --list' shows the targets)",
			target, strings.Join(amb.Candidates, ", "))}
	case errors.Is(err, peers.ErrNotSendable):
		return usageError{err.Error() + "; 'gateway send --list' shows the targets"}
	}
	msg := fmt.Sprintf("unknown target %q: not a configured peer name (or a prefix of one), an http(s):// URL or the contextId of a known conversation; 'gateway send --list' shows the targets", target)
	if hint != "" {
		msg += "; " + hint
	}
	return usageError{msg}
}

// peerArg is the TARGET that names t's peer for a new conversation.
func peerArg(t peers.Target) string {
	if t.Name != "" {
		return t.Name
	}
	return t.URL
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@+=,%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sendOutcome is what the peer answered.
type sendOutcome struct {
	contextID, taskID string
	state             a2a.TaskState // the task's last state; "" for a Message answer
	message           bool          // the peer answered with a Message, not a task
	statusText        string        // the text of the last status message
	replyMessageID    string
}

// finalState is the state recorded in the ledger.
func (o *sendOutcome) finalState() a2a.TaskState {
	if o.message {
		return a2a.StateCompleted
	}
	return o.state
}

// check reports a task that did not end well: failed, canceled, rejected, or a stream
// that ended while it still ran.
func (o *sendOutcome) check() error {
	switch {
	case o.message, o.state == a2a.StateCompleted, o.state.Interrupted():
		return nil
	case o.state.Terminal():
		if o.statusText != "" {
			return fmt.Errorf("%w: the peer's task %s ended %s: %s", errTaskEnded, dash(o.taskID), o.state, oneLine(o.statusText, 500))
		}
		return fmt.Errorf("%w: the peer's task %s ended %s", errTaskEnded, dash(o.taskID), o.state)
	}
	return fmt.Errorf("%w: the reply ended before the peer's task %s finished (last state %q)", errTaskEnded, dash(o.taskID), o.state)
}

// errTaskEnded: the peer answered, but its task did not complete.
var errTaskEnded = errors.New("no complete reply")

// streamingUnsupported reports whether a failed streaming send was refused as a method
// the peer does not offer (and so can be retried without streaming).
func streamingUnsupported(err error) bool {
	var re *a2aclient.RemoteError
	if !errors.As(err, &re) || errors.Is(err, a2aclient.ErrTransport) {
		return false
	}
	return errors.Is(err, a2a.ErrMethodNotFound) || (errors.Is(err, a2a.ErrUnsupportedOperation) && !errors.Is(err, a2a.ErrContextBusy))
}

// exchange sends p and writes the reply to rw as it arrives: streaming, or a plain send
// when the peer does not stream.
func exchange(ctx context.Context, c *a2aclient.Client, p *a2a.SendParams, rw *replyWriter) (sendOutcome, error) {
	var out sendOutcome
	st, err := c.SendStreamingMessage(ctx, p)
	if err != nil {
		if !streamingUnsupported(err) {
			return out, err
		}
		res, err := c.SendMessage(ctx, p)
		if err != nil {
			return out, err
		}
		switch {
		case res.Message != nil:
			out.onMessage(res.Message, rw)
		case res.Task != nil:
			out.onTask(res.Task, rw)
		}
		return out, rw.err
	}
	defer st.Close()
	for {
		ev, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, err
		}
		switch {
		case ev.Task != nil:
			out.onTask(ev.Task, rw)
		case ev.Message != nil:
			out.onMessage(ev.Message, rw)
		case ev.Artifact != nil:
			out.ids(ev.Artifact.ContextID, ev.Artifact.TaskID)
			rw.artifact(ev.Artifact.Artifact.ArtifactID, a2a.PartsText(ev.Artifact.Artifact.Parts), ev.Artifact.Append)
		case ev.Status != nil:
			out.ids(ev.Status.ContextID, ev.Status.TaskID)
			out.onStatus(ev.Status.Status, rw)
		}
		if rw.err != nil {
			return out, rw.err
		}
	}
	return out, nil
}

func (o *sendOutcome) ids(contextID, taskID string) {
	if contextID != "" {
		o.contextID = contextID
	}
	if taskID != "" {
		o.taskID = taskID
	}
}

func (o *sendOutcome) onTask(t *a2a.Task, rw *replyWriter) {
	o.ids(t.ContextID, t.ID)
	for _, a := range t.Artifacts {
		rw.artifact(a.ArtifactID, a2a.PartsText(a.Parts), false)
	}
	o.onStatus(t.Status, rw)
}

func (o *sendOutcome) onMessage(m *a2a.Message, rw *replyWriter) {
	o.ids(m.ContextID, m.TaskID)
	o.message, o.replyMessageID = true, m.MessageID
	rw.artifact("message:"+m.MessageID, m.Text(), false)
}

// onStatus keeps the state; the final message of a completed or interrupted task is the
// reply when no artifact carried one.
func (o *sendOutcome) onStatus(s a2a.TaskStatus, rw *replyWriter) {
	if s.State != "" {
		o.state = s.State
	}
	if s.Message == nil {
		return
	}
	o.statusText = s.Message.Text()
	if s.State == a2a.StateCompleted || s.State.Interrupted() {
		o.replyMessageID = s.Message.MessageID
		if !rw.hasText() {
			rw.artifact("status:"+s.Message.MessageID, o.statusText, false)
		}
	}
}

// replyWriter writes reply text to w as it arrives and keeps it, by artifact, for the
// ledger.
type replyWriter struct {
	w     io.Writer
	order []string          // artifact IDs in the order they began
	text  map[string]string // artifact ID -> its text so far
	last  byte              // the last byte written (0: none)
	err   error             // the first write error; nothing is written after it
}

func newReplyWriter(w io.Writer) *replyWriter {
	return &replyWriter{w: w, text: map[string]string{}}
}

func (rw *replyWriter) write(s string) {
	if rw.err != nil || s == "" {
		return
	}
	if _, err := io.WriteString(rw.w, s); err != nil {
		rw.err = err
		return
	}
	rw.last = s[len(s)-1]
}

// artifact takes a chunk of artifact id: appended to it, or (appendTo false) its whole
// text, of which only what was not yet shown is written.
func (rw *replyWriter) artifact(id, text string, appendTo bool) {
	prev, seen := rw.text[id]
	switch {
	case !seen:
		if text != "" && rw.last != 0 && rw.last != '\n' {
			rw.write("\n") // a second artifact starts on its own line
		}
		rw.order = append(rw.order, id)
		rw.text[id] = text
		rw.write(text)
	case appendTo:
		rw.text[id] = prev + text
		rw.write(text)
	case strings.HasPrefix(text, prev):
		rw.text[id] = text
		rw.write(text[len(prev):])
	default: // replaced with other content: shown again in full
		rw.text[id] = text
		rw.write("\n" + text)
	}
}

func (rw *replyWriter) hasText() bool {
	for _, t := range rw.text {
		if t != "" {
			return true
		}
	}
	return false
}

// finish ends the reply with a newline.
func (rw *replyWriter) finish() {
	if rw.last != 0 && rw.last != '\n' {
		rw.write("\n")
	}
}

// recorded is the reply as the ledger keeps it: the artifacts' texts, one per line.
func (rw *replyWriter) recorded() string {
	parts := make([]string, 0, len(rw.order))
	for _, id := range rw.order {
		if t := rw.text[id]; t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// deliveryError describes a failed exchange (exit 1): the JSON-RPC code and message of
// an error answer, a peer that cannot be reached, or the timeout.
func deliveryError(parent, sctx context.Context, t peers.Target, timeout time.Duration, err error) error {
	who := fmt.Sprintf("peer %s", t.Peer())
	if t.Name != "" {
		who = fmt.Sprintf("peer %s (%s)", t.Name, t.URL)
	}
	var re *a2aclient.RemoteError
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("%s: interrupted before the reply was complete; nothing was recorded", who)
	case sctx.Err() != nil:
		return fmt.Errorf("%s: no complete reply within --timeout %s; nothing was recorded", who, timeout)
	case errors.As(err, &re):
		hint := ""
		if errors.Is(err, a2a.ErrContextBusy) && !strings.Contains(re.Message, "retry") {
			hint = " (another task is running in that context: retry when it has finished)"
		}
		return fmt.Errorf("%s answered with a JSON-RPC error: %w%s; nothing was recorded", who, err, hint)
	case errors.Is(err, errTaskEnded):
		return fmt.Errorf("%s: %w; nothing was recorded", who, err)
	case errors.Is(err, a2aclient.ErrTransport):
		return fmt.Errorf("%s: delivery failed (is the peer up, and its url right?): %w; nothing was recorded", who, err)
	}
	return fmt.Errorf("%s: %w; nothing was recorded", who, err)
}
