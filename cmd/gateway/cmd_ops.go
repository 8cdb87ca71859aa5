package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2a-gateway/gateway/server"
	"github.com/a2a-gateway/gateway/tools"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
)

// errSeqPastEnd is the service's seq beyond a conversation's end (replay --at): main's
// exitCode makes it exit 2, a bad argument.
var errSeqPastEnd = conversations.ErrPastEnd

// opsFlags are the flags every operator command shares.
type opsFlags struct {
	server, token, dataDir string
	store                  string            // a postgres:// store to read directly
	quiet                  bool              // no "reading …" line on stderr
	policy                 projection.Policy // replay with no gateway running
	// onVerify is told the progress of `ledger verify` on a ledger this process opened
	// (ledger.Options.OnVerify); nil: not told.
	onVerify func(done, total int)
	config   configFile // the config file read, for messages
}

// configFlagUsage is the --config flag of the client commands.
const configFlagUsage = "the gateway's YAML config file (default ./gateway.yaml if present) (env GATEWAY_CONFIG): its addr, data-dir and admin-token are the defaults of --server, --data-dir and --admin-token, and send reads its peers: list"

// bindClientConfig reads the config file args name (readConfigFile), declares --config
// on fs, and returns the envFlags whose file values are the defaults the configuration
// gives the client commands (configFile.clientDefaults). A config file that cannot be
// read is among the envFlags' errors, reported after the flags are parsed, so that
// --help always prints the help.
func bindClientConfig(fs *flag.FlagSet, lookup func(string) (string, bool), args []string) (*envFlags, configFile) {
	cf, err := readConfigFile(args, lookup)
	e := &envFlags{fs: fs, lookup: lookup, file: cf.clientDefaults(lookup)}
	if err != nil {
		e.errs = append(e.errs, err)
	}
	fs.String("config", "", configFlagUsage) // read by readConfigFile, before the flags
	return e, cf
}

// bindOps declares the flags every operator command shares, with the defaults of the
// configuration args name (bindClientConfig).
func bindOps(fs *flag.FlagSet, lookup func(string) (string, bool), args []string, o *opsFlags) *envFlags {
	e, cf := bindClientConfig(fs, lookup, args)
	o.config = cf
	e.String(&o.server, "server", "http://127.0.0.1:9900", "running gateway to ask (its admin API)")
	e.String(&o.token, "admin-token", "", "admin token of that gateway (default: the one it wrote to --data-dir's admin.token, for a loopback --server)")
	e.String(&o.dataDir, "data-dir", "./data", "ledger directory to open directly when no gateway answers at --server")
	e.String(&o.store, "store", "", "a PostgreSQL store (postgres://…) to read directly, whatever gateways run on it; instead of --server and --data-dir")
	fs.BoolVar(&o.quiet, "quiet", false, "do not say on stderr which gateway or ledger was read")
	return e
}

// openService asks the running gateway's admin API, or opens the data dir when none
// answers there; either way the caller gets the conversations service's API, and stderr
// one line saying which was read (none with o.quiet). The returned close func releases
// what was opened.
func openService(ctx context.Context, o opsFlags, stderr io.Writer) (opsService, func(), error) {
	if o.store != "" {
		return openStoreService(ctx, o, stderr)
	}
	o = o.withLocalToken()
	ac := server.NewAdminClient(o.server, o.token)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := ac.List(pctx, conversations.ListOptions{Limit: 1})
	if err == nil {
		if !o.quiet {
			fmt.Fprintf(stderr, "gateway: reading the gateway at %s (its admin API; --data-dir is not read)\n", o.server)
		}
		return ac, ac.Close, nil
	}
	ac.Close()
	if !errors.Is(err, server.ErrUnreachable) {
		return nil, nil, err
	}
	path := filepath.Join(o.dataDir, "ledger.db")
	if _, serr := os.Stat(path); serr != nil {
		hint := ""
		if h := o.config.noConfigHint(); h != "" {
			hint = "; " + h
		}
		return nil, nil, fmt.Errorf("no gateway answers at %s and there is no ledger at %s (set --server or --data-dir%s)", o.server, path, hint)
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "gateway: no gateway answers at %s; reading %s directly\n", o.server, path)
	}
	led, err := ledger.Open(path, ledger.Options{OnVerify: o.onVerify}, warnLogger(stderr))
	if errors.Is(err, ledger.ErrInUse) {
		return nil, nil, fmt.Errorf("open %s: %w (a gateway that serves this data dir does not answer at --server %s: point --server, and --admin-token if needed, at it)", path, err, o.server)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	return conversations.New(led, conversations.Config{Policy: o.policy}), func() { _ = led.Close() }, nil
}

// parseOps parses an operator command's flags (help: see parseFlags); usage errors are
// a *flagError or a usageError.
func parseOps(fs *flag.FlagSet, ef *envFlags, args []string, nargs int, argName string, help func()) error {
	positional, err := parseFlags(fs, fs.Name(), args, true, help)
	if err != nil {
		return err
	}
	if err := errors.Join(ef.errs...); err != nil {
		return usageError{err.Error()}
	}
	// Re-parse only the positionals so fs.Arg/NArg report them.
	_ = fs.Parse(append([]string{"--"}, positional...))
	if fs.NArg() != nargs && !(nargs < 0 && fs.NArg() <= -nargs) {
		if nargs == 0 {
			return usageError{fmt.Sprintf("%s takes no arguments", fs.Name())}
		}
		return usageError{fmt.Sprintf("%s needs %s", fs.Name(), argName)}
	}
	return nil
}

const conversationsUsage = `Usage: gateway conversations COMMAND [flags]

Operator view of the conversations in the ledger, by their original contextIds.
Asks the running gateway's admin API (--server, --admin-token); when no gateway answers
there, opens --data-dir directly (one process may hold it at a time). The gateway's
config file (--config, default ./gateway.yaml if present) gives their defaults: its
addr, admin-token and data-dir; GATEWAY_ADDR, GATEWAY_ADMIN_TOKEN and GATEWAY_DATA_DIR
override it, and the flags (and GATEWAY_SERVER) override both.

Commands:
  list                 conversations, newest activity first: contextId, peer, turns,
                       tasks, created, last activity, running task
  show CONTEXT_ID      the conversation's messages and status changes (--all adds
                       audit-only entries such as rejected requests)
  export CONTEXT_ID    every ledger entry as JSON Lines (always JSON: it takes no --json)
  replay CONTEXT_ID    exactly what the agent was given at a turn (--at SEQ, default the
                       latest), rebuilt from the ledger: --format text|json|openai|anthropic
                       (--json is --format json)
  calls CONTEXT_ID     the calls around the conversation: its tool calls (arguments key by
                       key), each peer_send down to the outbound conversation it started
                       (peer, state, latency), what started it, the inbound hop chain
  memory rebuild CONTEXT_ID
                       regenerate the conversation's memory snapshots from the ledger with
                       the extractive summariser and check each stored one's evidence;
                       --write appends the latest one rebuilt when the stored one differs

list, show and calls print a table, or JSON with --json. A contextId that several peers use
needs --peer to say whose conversation is meant. One line on stderr says what was read:
"reading the gateway at URL" or "no gateway answers at URL; reading PATH directly"
(--quiet drops it).

Exit status: 0 done; 1 no such conversation, or the gateway or its ledger could not be
read; 2 usage error, including a contextId several peers use given without --peer, and a
replay --at SEQ past the conversation's last seq (the error names the last seq).

Run 'gateway conversations COMMAND --help' for its flags.
`

// convCmd is one `gateway conversations` command line, parsed.
type convCmd struct {
	sub, contextID       string
	o                    opsFlags
	asJSON, all          bool
	peer, prefix, cursor string
	limit                int
	at                   uint64
	format, model        string
	maxTokens            int
	write                bool // memory rebuild --write
}

// conversationsCommands are the commands of `gateway conversations`.
var conversationsCommands = []string{"list", "show", "export", "replay", "calls", "memory rebuild"}

func runConversations(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, conversationsUsage)
		return usageError{"conversations needs a command: " + strings.Join(conversationsCommands, ", ")}
	case isHelpArg(args[0]):
		fmt.Fprint(stdout, conversationsUsage)
		return flag.ErrHelp
	}
	if args[0] == "memory" { // the one two-word command
		if len(args) < 2 || args[1] != "rebuild" {
			return usageError{"conversations memory needs a command: rebuild"}
		}
		args = append([]string{"memory rebuild"}, args[2:]...)
	}
	cmd, err := parseConversations(args[0], args[1:], lookup, stdout)
	if err != nil {
		return err
	}
	if url, token, ok := turnToken(lookup); ok && cmd.sub == "show" {
		// Inside an exec agent's turn: the turn's conversation_history tool.
		return callTurnTool(ctx, url, token, tools.ToolHistory, map[string]any{"contextId": cmd.contextID, "limit": cmd.limit}, stdout)
	}
	svc, closeSvc, err := openService(ctx, cmd.o, stderr)
	if err != nil {
		return err
	}
	defer closeSvc()
	return cmd.run(ctx, svc, stdout, stderr)
}

// parseConversations parses the flags and argument of the conversations command sub;
// its --help goes to stdout.
func parseConversations(sub string, rest []string, lookup func(string) (string, bool), stdout io.Writer) (*convCmd, error) {
	fs := newFlagSet("conversations " + sub)
	cmd := &convCmd{sub: sub}
	ef := bindOps(fs, lookup, rest, &cmd.o)
	if !cmd.bind(fs, ef) {
		return nil, &unknownCommandError{Parent: "conversations", Name: sub, Commands: conversationsCommands}
	}
	help := func() {
		arg := ""
		if sub != "list" {
			arg = " CONTEXT_ID"
		}
		fmt.Fprintf(stdout, "Usage: gateway conversations %s [flags]%s\n\nFlags:\n", sub, arg)
		printFlags(stdout, fs)
	}
	nargs := 1
	if sub == "list" {
		nargs = 0
	}
	if err := parseOps(fs, ef, rest, nargs, "a CONTEXT_ID", help); err != nil {
		return nil, err
	}
	if cmd.limit < 0 {
		return nil, usageError{"--limit must not be negative"}
	}
	if sub == "replay" && cmd.asJSON {
		if cmd.format != "text" && cmd.format != "json" {
			return nil, usageError{fmt.Sprintf("--json and --format %s exclude each other", cmd.format)}
		}
		cmd.format = "json"
	}
	cmd.contextID = fs.Arg(0)
	return cmd, nil
}

// bind declares the flags of cmd.sub; false for an unknown command.
func (cmd *convCmd) bind(fs *flag.FlagSet, ef *envFlags) bool {
	fs.StringVar(&cmd.peer, "peer", "", "only conversations owned by this peer (needed when several peers use the same contextId)")
	switch cmd.sub {
	case "list":
		fs.BoolVar(&cmd.asJSON, "json", false, "print JSON")
		fs.IntVar(&cmd.limit, "limit", 0, "at most N conversations (0: all)")
		fs.StringVar(&cmd.prefix, "prefix", "", "only contextIds that start with this")
		fs.StringVar(&cmd.cursor, "cursor", "", "continue a --limit listing after the page whose JSON \"next\" this is")
	case "show":
		fs.BoolVar(&cmd.asJSON, "json", false, "print JSON (the conversation and its entries)")
		fs.IntVar(&cmd.limit, "limit", 0, "only the newest N entries (0: all)")
		fs.BoolVar(&cmd.all, "all", false, "include audit-only entries (rejected requests, error details)")
	case "export":
	case "calls":
		fs.BoolVar(&cmd.asJSON, "json", false, "print JSON (the call tree)")
	case "replay":
		fs.Uint64Var(&cmd.at, "at", 0, "the turn: the ledger seq of its message, or any seq inside it (0: the latest turn)")
		fs.StringVar(&cmd.format, "format", "text", "text (the single-text prompt), json (the provider-neutral request), openai or anthropic (the request body those backends send)")
		fs.BoolVar(&cmd.asJSON, "json", false, "print JSON: the same as --format json")
		fs.StringVar(&cmd.model, "model", "replay", "model name to put in openai/anthropic bodies")
		fs.IntVar(&cmd.maxTokens, "max-tokens", 1024, "max_tokens for anthropic bodies")
		ef.Int(&cmd.o.policy.HistoryLimit, "history-limit", 20, "with no gateway running: the history limit the gateway used")
		ef.String(&cmd.o.policy.Operator, "operator-policy", "", "with no gateway running: the operator policy the gateway used")
		ef.Int(&cmd.o.policy.Budget.History, "history-tokens", 8192, "with no gateway running: the history budget the gateway used")
		ef.Bool(&cmd.o.policy.Memory, "history-memory", false, "with no gateway running: whether the gateway kept memory (--history-memory)")
		ef.Int(&cmd.o.policy.Budget.Memory, "memory-tokens", 512, "with no gateway running: the memory budget the gateway used")
	case "memory rebuild":
		fs.BoolVar(&cmd.asJSON, "json", false, "print JSON (the report)")
		fs.BoolVar(&cmd.write, "write", false, "append the latest snapshot rebuilt when the stored one differs or fails the evidence check")
		ef.Int(&cmd.o.policy.Budget.History, "history-tokens", 8192, "with no gateway running: the history budget the gateway used")
		ef.Int(&cmd.o.policy.Budget.Memory, "memory-tokens", 512, "with no gateway running: the memory budget the gateway used")
		cmd.o.policy.Memory = true
	default:
		return false
	}
	return true
}

// run calls the service and prints its answer.
func (cmd *convCmd) run(ctx context.Context, svc opsService, stdout, stderr io.Writer) error {
	ref := conversations.Ref{ContextID: cmd.contextID, Owner: cmd.peer}
	switch cmd.sub {
	case "list":
		page, err := svc.List(ctx, conversations.ListOptions{Owner: cmd.peer, Prefix: cmd.prefix, Limit: cmd.limit, Cursor: cmd.cursor})
		if err != nil {
			return err
		}
		if cmd.asJSON {
			return writeJSONIndent(stdout, page)
		}
		printList(stdout, page.Conversations)
		if page.Next != "" {
			fmt.Fprintf(stderr, "gateway: more conversations follow: add --cursor %s\n", page.Next)
		}
	case "show":
		res, err := svc.Show(ctx, ref, conversations.ShowOptions{Limit: cmd.limit, All: cmd.all})
		if err != nil {
			return err
		}
		if cmd.asJSON {
			return writeJSONIndent(stdout, res)
		}
		printShow(stdout, res)
	case "export":
		return svc.Export(ctx, ref, stdout)
	case "replay":
		res, err := svc.Replay(ctx, ref, cmd.at)
		if err != nil {
			return err
		}
		return printReplay(stdout, res, cmd.format, cmd.model, cmd.maxTokens)
	case "calls":
		tree, err := svc.Calls(ctx, ref)
		if err != nil {
			return err
		}
		if cmd.asJSON {
			return writeJSONIndent(stdout, tree)
		}
		printCalls(stdout, tree)
	case "memory rebuild":
		rep, err := svc.RebuildMemory(ctx, ref, cmd.write)
		if err != nil {
			return err
		}
		if cmd.asJSON {
			return writeJSONIndent(stdout, rep)
		}
		printRebuild(stdout, rep)
	}
	return nil
}

// printReplay writes a replayed turn in the requested format; the bytes are those the
// agent backend of that kind was given.
func printReplay(w io.Writer, res replayResult, format, model string, maxTokens int) error {
	var b []byte
	var err error
	switch format {
	case "text":
		b = []byte(res.Prompt)
	case "json":
		return writeJSONIndent(w, res)
	case "openai":
		b, err = res.Request.OpenAI(model, true)
	case "anthropic":
		b, err = res.Request.Anthropic(model, maxTokens, true)
	default:
		return usageError{fmt.Sprintf("--format %q: want text, json, openai or anthropic", format)}
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b) // exactly the bytes, no newline added
	return err
}

// ledgerUsage is `gateway ledger --help`.
const ledgerUsage = `Usage: gateway ledger COMMAND [flags]

Checks the ledger, through the running gateway's admin API (--server, --admin-token) or,
when no gateway answers there, in --data-dir directly; their defaults come from the
gateway's config file (--config, default ./gateway.yaml if present), as for
'gateway conversations'.

Commands:
  verify [CONTEXT_ID]  walk the hash chains of every conversation (or of one), and the
                       file's pages
  salvage --out FILE   copy every intact conversation to a new ledger file (offline)
  copy --from --to     copy a ledger between a data dir and PostgreSQL, verifying every chain
  upgrade              upgrade the data dir's ledger file to format 2 (offline)

Run 'gateway ledger COMMAND --help' for its flags.
`

// ledgerVerifyUsage heads `gateway ledger verify --help`; the flags follow.
const ledgerVerifyUsage = `Usage: gateway ledger verify [flags] [CONTEXT_ID]

Walks the hash chains of every conversation (or of one) and checks that each entry's
hash, its link to the previous entry, and the gap-free sequence all hold, and (a data
dir's ledger) every page of the file and that its indexes find every conversation. Exits
0 when everything verifies, 1 and names each break otherwise. Checking every
conversation of a ledger it opens itself (no gateway at --server), it says on stderr
about once a second how far it has got (not with --quiet); a running gateway asked
through its admin API logs that instead.

Flags:
`

// ledgerCommands are the commands of `gateway ledger`.
var ledgerCommands = []string{"verify", "salvage", "copy", "upgrade"}

func runLedger(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "salvage" {
		return runLedgerSalvage(ctx, args[1:], lookup, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "copy" {
		return runLedgerCopy(ctx, args[1:], lookup, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "upgrade" {
		return runLedgerUpgrade(ctx, args[1:], lookup, stdout, stderr)
	}
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, ledgerUsage)
		return usageError{"ledger needs a command: " + strings.Join(ledgerCommands, ", ")}
	case isHelpArg(args[0]):
		fmt.Fprint(stdout, ledgerUsage)
		return flag.ErrHelp
	case args[0] != "verify":
		return &unknownCommandError{Parent: "ledger", Name: args[0], Commands: ledgerCommands}
	}
	fs := newFlagSet("ledger verify")
	var o opsFlags
	ef := bindOps(fs, lookup, args[1:], &o)
	var peer string
	var asJSON bool
	fs.StringVar(&peer, "peer", "", "the owner of CONTEXT_ID, when several peers use it")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	help := func() { fmt.Fprint(stdout, ledgerVerifyUsage); printFlags(stdout, fs) }
	if err := parseOps(fs, ef, args[1:], -1, "at most one CONTEXT_ID", help); err != nil {
		return err
	}
	if !o.quiet {
		o.onVerify = verifyProgressPrinter(stderr)
	}
	svc, closeSvc, err := openService(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer closeSvc()
	rep, err := svc.Verify(ctx, conversations.Ref{ContextID: fs.Arg(0), Owner: peer})
	if err != nil {
		return err
	}
	if asJSON {
		if err := writeJSONIndent(stdout, rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintf(stdout, "BROKEN  context %q  peer %q  seq %d: %s\n", p.ContextID, p.Peer, p.Seq, p.Reason)
		}
		if rep.OK {
			fmt.Fprintf(stdout, "ok: %d conversation(s) verified\n", rep.Checked)
		}
	}
	if !rep.OK {
		return fmt.Errorf("ledger verify: %d broken chain(s) in %d conversation(s) checked", len(rep.Problems), rep.Checked)
	}
	return nil
}

// verifyProgressPrinter prints to w how far a verification of every conversation has got,
// about once a second while it runs (a run under a second prints nothing).
func verifyProgressPrinter(w io.Writer) func(done, total int) {
	return func(done, total int) {
		if done < total {
			fmt.Fprintf(w, "gateway: verified %d of %d conversations (%d%%)\n", done, total, done*100/total)
		}
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func printList(w io.Writer, list []convView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tPEER\tTURNS\tTASKS\tCREATED\tLAST ACTIVITY\tRUNNING TASK")
	for _, c := range list {
		running := c.RunningTask
		if running == "" {
			running = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", c.ContextID, c.Peer, c.Turns, c.Tasks, fmtTime(c.CreatedAt), fmtTime(c.LastActivity), running)
	}
	_ = tw.Flush()
}

func printShow(w io.Writer, res showResult) {
	c := res.Conversation
	fmt.Fprintf(w, "conversation %s  peer %s  turns %d  tasks %d  entries %d\n", c.ContextID, c.Peer, c.Turns, c.Tasks, c.Entries)
	fmt.Fprintf(w, "created %s  last activity %s", fmtTime(c.CreatedAt), fmtTime(c.LastActivity))
	if c.RunningTask != "" {
		fmt.Fprintf(w, "  running task %s", c.RunningTask)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	traced := slices.ContainsFunc(res.Entries, func(e ledger.Entry) bool { return e.TraceID != "" })
	for _, e := range res.Entries {
		what := strings.ToLower(string(e.Kind))
		switch e.Kind {
		case ledger.KindUserMessage:
			what = "user"
		case ledger.KindAgentReply:
			what = "agent"
		case ledger.KindStatus:
			what = "status"
		}
		text := entryText(&e)
		switch e.Kind {
		case ledger.KindStatus:
			text = strings.TrimSpace(e.State + "  " + text + "  " + conversations.TurnFigures(&e))
		case ledger.KindMemorySnapshot:
			what, text = "memory", memoryLine(&e)
		case ledger.KindAudit:
			text = strings.TrimSpace(auditSummary(&e) + "  " + text)
		case ledger.KindPushConfig, ledger.KindPushOutbox, ledger.KindPushAttempt:
			what, text = strings.ToLower(strings.ReplaceAll(string(e.Kind), "_", "-")), conversations.PushText(&e)
		}
		task := e.TaskID // whole: UUIDv7 ids of the same minute share their first 8 characters
		if task == "" {
			task = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\ttask %s\t%s%s\n", e.Seq, e.CreatedAt.UTC().Format("15:04:05.000"), what, task, traceColumn(traced, &e), oneLine(text, 200))
	}
	_ = tw.Flush()
	if res.Memory != nil {
		printMemory(w, res.Memory)
	}
}

// traceColumn is the trace column of printShow, when an entry shown has trace ids:
// "trace=<trace id> span=<span id>", or "-" for an entry without.
func traceColumn(traced bool, e *ledger.Entry) string {
	switch {
	case !traced:
		return ""
	case e.TraceID == "":
		return "-\t"
	}
	return "trace=" + e.TraceID + " span=" + e.SpanID + "\t"
}

// auditSummary says what an audit-only entry of a rejected request records, from its
// metadata: "rejected CONTEXT_BUSY", plus the method when it was not a send
// ("rejected CONTEXT_BUSY: CancelTask of task T while task H runs").
func auditSummary(e *ledger.Entry) string {
	var m struct {
		Rejected      string `json:"rejected"`
		Method        string `json:"method"`
		TaskID        string `json:"taskId"`
		RunningTaskID string `json:"runningTaskId"`
	}
	if json.Unmarshal(e.Metadata, &m) != nil || m.Rejected == "" {
		return ""
	}
	s := "rejected " + m.Rejected
	if m.Method != "" {
		s += ": " + m.Method
		if m.TaskID != "" {
			s += " of task " + m.TaskID
		}
		if m.RunningTaskID != "" {
			s += " while task " + m.RunningTaskID + " runs"
		}
	}
	return s
}

func entryText(e *ledger.Entry) string {
	var b strings.Builder
	for _, p := range e.Parts {
		switch {
		case p.ArtifactRef != "":
			fmt.Fprintf(&b, "[%d bytes in %s]", p.Size, p.ArtifactRef)
		case p.Kind == ledger.PartText:
			b.WriteString(p.Text)
		default:
			fmt.Fprintf(&b, "[%s part]", p.Kind)
		}
	}
	return b.String()
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// parseInterspersed parses flags that may come before or after positional arguments
// ("show CTX --json" and "show --json CTX" both work); "--" ends the flags. Its error is
// fs.Parse's.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// withLocalToken returns o with its token set from the data dir's admin token file when
// none was given (see localAdminToken).
func (o opsFlags) withLocalToken() opsFlags {
	if o.token == "" {
		o.token = server.LocalAdminToken(o.server, o.dataDir)
	}
	return o
}
