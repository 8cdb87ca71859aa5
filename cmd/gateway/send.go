package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
	"github.com/a2a-gateway/gateway/conversations/contextid"
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
  CONTEXT_ID  a conversation an earlier send started: continues it with its peer
They are tried in that order, except that a prefix is tried last. 'gateway send --list'
prints every target, each exactly as TARGET accepts it; a conversation whose contextId
is taken by a name or URL is continued with 'gateway send PEER --context CONTEXT_ID'.

Outbound conversations are recorded in the local gateway's ledger under the peer
"out:<name>" (or "out:<url>"), so that 'gateway conversations list' shows them and a
later send continues them. The exchange is recorded only once the peer has answered,
through the gateway's admin API at --server or, when no gateway answers there, in
--data-dir directly (one process may hold it at a time).

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
	config    string
	contextID string
	newConv   bool
	dialect   string
	timeout   time.Duration
	list      bool
	asJSON    bool
}

// runSend is `gateway send`.
func runSend(ctx context.Context, args []string, lookup func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	var peerList []Peer
	var file map[string]string
	if path, explicit := configPath(args, lookup); path != "" {
		probe := flag.NewFlagSet("serve", flag.ContinueOnError)
		probe.SetOutput(io.Discard)
		bindServe(probe, func(string) (string, bool) { return "", false }, nil, new(Config))
		m, err := loadConfigFile(path, probe)
		if err != nil && (explicit || !errors.Is(err, os.ErrNotExist)) {
			return usageError{err.Error()}
		}
		if err == nil {
			file = sendFileDefaults(m)
			if peerList, err = loadPeersFile(path, lookup); err != nil {
				return usageError{err.Error()}
			}
		}
	}
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o sendOptions
	e := &envFlags{fs: fs, lookup: lookup, file: file}
	fs.StringVar(&o.config, "config", "", "YAML config file with the peers: list (default ./gateway.yaml if present) (env GATEWAY_CONFIG); its data-dir, admin-token and addr are the defaults of --data-dir, --admin-token and --server")
	fs.StringVar(&o.contextID, "context", "", "continue the conversation with this contextId (TARGET is then its peer)")
	fs.BoolVar(&o.newConv, "new", false, "start a new conversation, even when TARGET is a contextId (then: with its peer)")
	fs.StringVar(&o.dialect, "dialect", "auto", "A2A dialect: auto (from the peer's agent card), 1.0 or 0.3")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "the longest the whole exchange may take, the streamed reply included")
	fs.BoolVar(&o.list, "list", false, "list the targets: configured peers (and whether their agent card answers) and known conversations")
	fs.BoolVar(&o.asJSON, "json", false, "with --list: print JSON")
	e.String(&o.ops.server, "server", "http://127.0.0.1:9900", "the local gateway whose ledger records the conversation (its admin API)")
	e.String(&o.ops.token, "admin-token", "", "admin token of that gateway")
	e.String(&o.ops.dataDir, "data-dir", "./data", "ledger directory to use directly when no gateway answers at --server")
	fs.Usage = func() {
		fmt.Fprint(stderr, sendUsage)
		printFlags(stderr, fs)
	}
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := errors.Join(e.errs...); err != nil {
		return usageError{err.Error()}
	}
	dialect, err := a2aclient.ParseDialect(o.dialect)
	if err != nil {
		return usageError{"--dialect: " + err.Error()}
	}
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
	}
	if o.contextID != "" {
		if err := contextid.Validate(o.contextID); err != nil {
			return usageError{"--context: " + err.Error()}
		}
	}

	store, err := openSendStore(ctx, o.ops, stderr)
	if err != nil {
		return err
	}
	known, err := store.known(ctx)
	if err != nil {
		return err
	}
	dir := peers.NewDirectory(peerList, known)
	if o.list {
		return sendList(ctx, dir, min(o.timeout, listCardTimeout), o.asJSON, stdout, stderr)
	}

	target := positional[0]
	tg, err := dir.Resolve(target)
	if err != nil {
		return targetUsageError(target, err)
	}
	contextID, owner := o.contextID, tg.Owner
	if tg.Kind == peers.KindConversation {
		switch {
		case o.newConv:
			owner = peers.Owner(tg.Peer())
		case o.contextID != "" && o.contextID != tg.ContextID:
			return usageError{fmt.Sprintf("TARGET %q continues conversation %q but --context says %q; give one of them", target, tg.ContextID, o.contextID)}
		default:
			contextID = tg.ContextID
		}
	}

	text, err := sendMessageText(positional, stdin)
	if err != nil {
		return err
	}

	tr := peers.NewTransport()
	defer tr.CloseIdleConnections()
	client, err := a2aclient.New(tg.URL, a2aclient.Options{HTTPClient: &http.Client{Transport: tr}, Token: tg.Token, Dialect: dialect, Timeout: o.timeout})
	if err != nil {
		return fmt.Errorf("peer %s: %w", tg.Peer(), err)
	}
	msg := a2a.Message{MessageID: uuid.NewString(), ContextID: contextID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}
	sctx, cancel := context.WithTimeout(ctx, o.timeout)
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
		return deliveryError(ctx, sctx, tg, o.timeout, err)
	}
	if rw.err != nil {
		return fmt.Errorf("writing the reply: %w", rw.err)
	}
	if out.state.Interrupted() {
		fmt.Fprintf(stderr, "gateway: the peer waits for more input (%s): reply with 'gateway send %s MESSAGE'\n", out.state, shellQuote(out.contextID))
	}

	peer, _ := peers.PeerOfOwner(owner)
	continueHint := fmt.Sprintf("gateway send %s --context %s", shellQuote(peerArg(tg)), shellQuote(out.contextID))
	switch {
	case out.contextID == "":
		fmt.Fprintln(stderr, "gateway: warning: the peer's reply names no contextId, so the exchange was not recorded and cannot be continued")
		return nil
	case contextID != "" && out.contextID != contextID:
		fmt.Fprintf(stderr, "gateway: warning: the peer answered in context %q, not %q: it started a new conversation\n", out.contextID, contextID)
	}
	rec := outboundRecord{
		Peer: peer, PeerURL: tg.URL, ContextID: out.contextID, RemoteTaskID: out.taskID, State: string(out.finalState()),
		MessageID: msg.MessageID, Text: text, ReplyMessageID: out.replyMessageID, Reply: rw.recorded(),
	}
	// The peer has answered: the record is made even if ctx is canceled now.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	if err := store.record(rctx, rec); err != nil {
		fmt.Fprintf(stderr, "gateway: warning: the exchange was NOT recorded in the local ledger (%v), so it cannot be continued by its contextId alone; continue it with: %s MESSAGE\n", err, continueHint)
	}
	return nil
}

// sendFileDefaults picks, from a config file's values, the defaults of send's flags:
// data-dir, admin-token, and the server from addr (an unspecified host is reached on
// loopback).
func sendFileDefaults(m map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"data-dir", "admin-token"} {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	if addr, ok := m["addr"]; ok {
		if host, port, err := net.SplitHostPort(addr); err == nil && port != "0" {
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				host = "127.0.0.1"
			}
			out["server"] = "http://" + net.JoinHostPort(host, port)
		}
	}
	return out
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

// targetUsageError explains a TARGET that resolves to nothing usable (exit 2).
func targetUsageError(target string, err error) error {
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
	return usageError{fmt.Sprintf("unknown target %q: not a configured peer name (or a prefix of one), an http(s):// URL or the contextId of a known conversation; 'gateway send --list' shows the targets", target)}
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

// sendStore is where `gateway send` finds the known outbound conversations and records
// an exchange: the local gateway's admin API, or its data dir when no gateway answers.
type sendStore interface {
	known(ctx context.Context) ([]peers.Conversation, error)
	record(ctx context.Context, rec outboundRecord) error
}

// openSendStore asks the gateway at o.server; when none answers there, it uses the
// ledger in o.dataDir. Any other failure of the gateway (a refused token) is an error.
func openSendStore(ctx context.Context, o opsFlags, stderr io.Writer) (sendStore, error) {
	hs := newHTTPSource(o.server, o.token)
	pctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	defer cancel()
	_, err := hs.List(pctx, "", 1)
	if err == nil {
		return httpSendStore{hs}, nil
	}
	hs.close()
	if !errors.Is(err, errUnreachable) {
		return nil, fmt.Errorf("the local gateway at --server %s refused its admin API (check --admin-token or GATEWAY_ADMIN_TOKEN): %w; nothing was sent", o.server, err)
	}
	path := filepath.Join(o.dataDir, "ledger.db")
	fmt.Fprintf(stderr, "gateway: no gateway answers at %s; using the ledger %s directly\n", o.server, path)
	return dirSendStore{path: path, server: o.server}, nil
}

// outboundConversations keeps the outbound conversations of a listing.
func outboundConversations(list []convView) []peers.Conversation {
	var out []peers.Conversation
	for _, c := range list {
		if p, ok := peers.PeerOfOwner(c.Peer); ok {
			out = append(out, peers.Conversation{ContextID: c.ContextID, Owner: c.Peer, Peer: p, Turns: c.Turns, LastActivity: c.LastActivity})
		}
	}
	return out
}

// httpSendStore goes through the running gateway's admin API.
type httpSendStore struct{ hs *httpSource }

func (s httpSendStore) known(ctx context.Context) ([]peers.Conversation, error) {
	defer s.hs.close()
	list, err := s.hs.List(ctx, "", 0)
	if err != nil {
		return nil, fmt.Errorf("listing the known conversations: %w", err)
	}
	return outboundConversations(list), nil
}

func (s httpSendStore) record(ctx context.Context, rec outboundRecord) error {
	defer s.hs.close()
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.hs.base+adminPrefix+"outbound", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.hs.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.hs.token)
	}
	resp, err := s.hs.hc.Do(req)
	if err != nil {
		return fmt.Errorf("the gateway at %s: %w", s.hs.base, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return fmt.Errorf("the gateway at %s answered %s: %s", s.hs.base, resp.Status, e.Error)
	}
	return nil
}

// dirSendStore opens the ledger file for each call, so that it is held only briefly.
type dirSendStore struct{ path, server string }

func (s dirSendStore) open() (*ledger.Store, error) {
	led, err := ledger.Open(s.path, ledger.Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("no gateway answers at --server %s, and opening its ledger directly failed (if a gateway runs on that data dir, point --server and --admin-token at it): %w", s.server, err)
	}
	return led, nil
}

func (s dirSendStore) known(ctx context.Context) ([]peers.Conversation, error) {
	if _, err := os.Stat(s.path); errors.Is(err, os.ErrNotExist) {
		return nil, nil // no ledger yet: nothing known
	}
	led, err := s.open()
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was sent", err)
	}
	defer led.Close()
	convs, err := led.List(ctx, ledger.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the known conversations in %s: %w", s.path, err)
	}
	views := make([]convView, len(convs))
	for i, c := range convs {
		views[i] = convView{ContextID: c.ContextID, Peer: c.Owner, Turns: c.Turns, LastActivity: c.LastActivity}
	}
	return outboundConversations(views), nil
}

func (s dirSendStore) record(ctx context.Context, rec outboundRecord) error {
	led, err := s.open()
	if err != nil {
		return err
	}
	_, err = recordOutbound(ctx, led, rec)
	return errors.Join(err, led.Close())
}

// outboundRecord is one exchange `gateway send` had with a peer, recorded in one ledger
// append; it is also the body of POST /admin/v1/outbound.
type outboundRecord struct {
	// Peer is the configured peer's name, or the URL of a raw-URL target; the
	// conversation's owner is "out:" + Peer.
	Peer    string `json:"peer"`
	PeerURL string `json:"peerUrl"`
	// ContextID is the contextId the peer answered in.
	ContextID    string `json:"contextId"`
	RemoteTaskID string `json:"remoteTaskId,omitempty"`
	// State is the peer task's final state: completed, input-required or auth-required
	// (failed exchanges are not recorded).
	State          string `json:"state"`
	MessageID      string `json:"messageId,omitempty"`
	Text           string `json:"text"`
	ReplyMessageID string `json:"replyMessageId,omitempty"`
	Reply          string `json:"reply"`
}

// validate checks rec; every problem is reported, each wrapping ledger.ErrInvalid.
func (rec *outboundRecord) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format+": %w", append(args, ledger.ErrInvalid)...))
	}
	switch {
	case rec.Peer == "":
		bad("peer: empty")
	case strings.HasPrefix(strings.ToLower(rec.Peer), "http://") || strings.HasPrefix(strings.ToLower(rec.Peer), "https://"):
		if !validHTTPURL(rec.Peer) {
			bad("peer: %q is not an http(s) URL without user info", rec.Peer)
		}
	case !validPeerName(rec.Peer):
		bad("peer: %q is neither a peer name (letters, digits, '-', '_', '.') nor an http(s) URL", rec.Peer)
	}
	if !validHTTPURL(rec.PeerURL) {
		bad("peerUrl: %q is not an http(s) URL without user info", rec.PeerURL)
	}
	if err := contextid.Validate(rec.ContextID); err != nil {
		bad("contextId: %v", err)
	}
	switch st := a2a.TaskState(rec.State); {
	case st == a2a.StateCompleted, st.Interrupted():
	default:
		bad("state: %q; want completed, input-required or auth-required (failed exchanges are not recorded)", rec.State)
	}
	if strings.TrimSpace(rec.Text) == "" {
		bad("text: empty")
	}
	return errors.Join(errs...)
}

func validHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) && u.Host != "" && u.User == nil
}

// appendRequest is the ledger append of rec: our message (operator-trusted), the peer's
// reply (untrusted, with the peer's URL and task id) and the final status.
func (rec *outboundRecord) appendRequest() ledger.AppendRequest {
	meta, _ := json.Marshal(struct {
		PeerURL      string `json:"peerUrl"`
		RemoteTaskID string `json:"remoteTaskId,omitempty"`
	}{rec.PeerURL, rec.RemoteTaskID})
	text := func(s string) []ledger.Part {
		if s == "" {
			return nil
		}
		return []ledger.Part{{Kind: ledger.PartText, Text: s}}
	}
	return ledger.AppendRequest{Owner: peers.Owner(rec.Peer), ContextID: rec.ContextID, Entries: []ledger.Entry{
		{Kind: ledger.KindUserMessage, Trust: ledger.TrustOperator, Visibility: ledger.VisibilityModel,
			Actor: contextid.LocalOwner, MessageID: rec.MessageID, Role: ledger.RoleUser, Parts: text(rec.Text)},
		{Kind: ledger.KindAgentReply, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
			Actor: rec.Peer, MessageID: rec.ReplyMessageID, Role: ledger.RoleAgent, Parts: text(rec.Reply), Metadata: meta},
		{Kind: ledger.KindStatus, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
			Actor: rec.Peer, State: rec.State, Metadata: meta},
	}}
}

// recordOutbound validates rec and appends it. Errors: ledger.ErrInvalid (wrapped) for
// a record that fails validation; otherwise those of ledger.Store.Append.
func recordOutbound(ctx context.Context, led *ledger.Store, rec outboundRecord) (ledger.AppendResult, error) {
	if err := rec.validate(); err != nil {
		return ledger.AppendResult{}, err
	}
	return led.Append(ctx, rec.appendRequest())
}

// listedPeer and listedConversation are the rows of `send --list --json`.
type listedPeer struct {
	Target string     `json:"target"`
	Name   string     `json:"name"`
	URL    string     `json:"url"`
	Card   cardStatus `json:"card"`
}

type cardStatus struct {
	OK    bool   `json:"ok"`
	Name  string `json:"name,omitempty"`  // the card's agent name
	Error string `json:"error,omitempty"` // why it did not answer
}

type listedConversation struct {
	Target       string    `json:"target"`
	ContextID    string    `json:"contextId"`
	Peer         string    `json:"peer"`
	Turns        int       `json:"turns"`
	LastActivity time.Time `json:"lastActivity"`
}

// unlistedConversation is a known conversation no TARGET names.
type unlistedConversation struct {
	ContextID    string `json:"contextId"`
	Peer         string `json:"peer"`
	Reason       string `json:"reason"`
	ContinueWith string `json:"continueWith,omitempty"`
}

// sendList prints the targets: the sendable peers (their cards fetched concurrently,
// each within cardTimeout) and the known conversations.
func sendList(ctx context.Context, dir *peers.Directory, cardTimeout time.Duration, asJSON bool, stdout, stderr io.Writer) error {
	ps := dir.Peers()
	tr := peers.NewTransport()
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	cards := make([]cardStatus, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { cards[i] = probeCard(ctx, hc, p, cardTimeout) }) // exits within cardTimeout
	}
	wg.Wait()
	var lp []listedPeer
	for i, p := range ps {
		if t := dir.PeerTarget(p); t != "" {
			lp = append(lp, listedPeer{Target: t, Name: p.Name, URL: p.URL, Card: cards[i]})
		}
	}
	var lc []listedConversation
	var unlisted []unlistedConversation
	for _, c := range dir.Conversations() {
		t := dir.ConversationTarget(c)
		if strings.ContainsFunc(t, unicode.IsSpace) {
			// The text listing's first column could not show it; keep both listings equal.
			unlisted = append(unlisted, unlistedConversation{ContextID: c.ContextID, Peer: c.Peer,
				Reason: "its contextId holds white space", ContinueWith: "gateway send " + shellQuote(t)})
			continue
		}
		if t != "" {
			lc = append(lc, listedConversation{Target: t, ContextID: c.ContextID, Peer: c.Peer, Turns: c.Turns, LastActivity: c.LastActivity})
			continue
		}
		unlisted = append(unlisted, unlistedReason(dir, c))
	}
	if asJSON {
		return writeJSONIndent(stdout, struct {
			Peers         []listedPeer           `json:"peers"`
			Conversations []listedConversation   `json:"conversations"`
			Unlisted      []unlistedConversation `json:"unlisted,omitempty"`
		}{nonNil(lp), nonNil(lc), unlisted})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if len(lp) > 0 {
		fmt.Fprintln(tw, "TARGET\tURL\tAGENT CARD")
		for _, p := range lp {
			card := "answers"
			switch {
			case p.Card.OK && p.Card.Name != "":
				card = fmt.Sprintf("answers (%s)", oneLine(p.Card.Name, 60))
			case !p.Card.OK:
				// The last clause of the error says what went wrong ("connection refused",
				// "HTTP 404 Not Found (check the URL)"); --json has all of it.
				msg := p.Card.Error
				if i := strings.LastIndex(msg, ": "); i >= 0 {
					msg = msg[i+2:]
				}
				card = "no answer: " + oneLine(msg, 100)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Target, p.URL, card)
		}
	} else {
		fmt.Fprintln(stderr, "gateway: no peers with a url in the config file (its peers: list); a URL target needs none")
	}
	if len(lc) > 0 {
		if len(lp) > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintln(tw, "TARGET\tPEER\tTURNS\tLAST ACTIVITY")
		for _, c := range lc {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", c.Target, c.Peer, c.Turns, fmtTime(c.LastActivity))
		}
	} else {
		fmt.Fprintln(stderr, "gateway: no outbound conversations yet")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, u := range unlisted {
		if u.ContinueWith != "" {
			fmt.Fprintf(stderr, "gateway: conversation %q with %s is not listed as a target (%s); continue it with: %s MESSAGE\n", u.ContextID, u.Peer, u.Reason, u.ContinueWith)
		} else {
			fmt.Fprintf(stderr, "gateway: conversation %q with %s is not listed as a target (%s)\n", u.ContextID, u.Peer, u.Reason)
		}
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// unlistedReason says why no TARGET names c, and how to continue it.
func unlistedReason(dir *peers.Directory, c peers.Conversation) unlistedConversation {
	u := unlistedConversation{ContextID: c.ContextID, Peer: c.Peer}
	_, err := dir.Resolve(c.ContextID)
	var amb *peers.AmbiguousError
	switch {
	case errors.Is(err, peers.ErrNotSendable):
		u.Reason = "its peer is no longer configured with a url"
		return u
	case errors.As(err, &amb):
		u.Reason = "its contextId is known with several peers"
	default:
		u.Reason = "its contextId is also a peer name or a URL"
	}
	peerTarget := c.Peer
	if t, err := dir.Resolve(c.Peer); err == nil && t.Kind != peers.KindConversation && t.Owner == c.Owner {
		peerTarget = dir.PeerTarget(peers.Peer{Name: t.Name})
		if t.Kind == peers.KindURL {
			peerTarget = t.URL
		}
	}
	if peerTarget != "" {
		u.ContinueWith = fmt.Sprintf("gateway send %s --context %s", shellQuote(peerTarget), shellQuote(c.ContextID))
	}
	return u
}

// probeCard fetches p's agent card within timeout.
func probeCard(ctx context.Context, hc *http.Client, p Peer, timeout time.Duration) cardStatus {
	c, err := a2aclient.New(p.URL, a2aclient.Options{HTTPClient: hc, Token: p.Token, Timeout: timeout})
	if err != nil {
		return cardStatus{Error: err.Error()}
	}
	card, err := c.Card(ctx)
	if err != nil {
		return cardStatus{Error: strings.TrimPrefix(err.Error(), a2aclient.ErrTransport.Error()+": ")}
	}
	return cardStatus{OK: true, Name: card.Name}
}
