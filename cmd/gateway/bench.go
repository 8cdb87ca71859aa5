package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2a-gateway/gateway/internal/loadgen"
)

// benchHelpHead and benchHelpTail surround the generated flag list of
// `gateway bench --help`.
const (
	benchHelpHead = `Usage: gateway bench [flags] URL

Load-test the A2A JSON-RPC endpoint at URL. --concurrency workers send
message/send (--dialect 0.3) or SendMessage (--dialect 1.0) requests back to
back, each with one request in flight, for --duration after an unmeasured
--warmup. The report gives the requests completed, errors by JSON-RPC code
("http <status>", "transport", "timeout" or "invalid response" when there is
none), successful requests per second and p50/p90/p99 latency in milliseconds
from the full histogram. Errors a gateway answers when it refuses load get a
note: -32000 (RATE_LIMITED: run the target with --rate-limit 0 to measure
throughput) and -32004 (CONTEXT_BUSY: two workers shared a contextId). With --stream the workers use message/stream or
SendStreamingMessage over SSE, time each stream to its terminal event, and
also report the time to the first event.

Absolute figures drift (by ±30% on a shared VM). With --baseline the command
also starts an in-process bare net/http JSON-RPC echo server on 127.0.0.1 and
benches URL and it in alternating rounds (target, baseline, target, ...); the
target/baseline ratios of the medians are the figures to report.

With --burst N the command measures busy rejection instead (perf anchor G7):
N requests, all with one fresh contextId, are fired at once, each on its own
connection opened (or kept alive) and with its bytes built beforehand, released
together; --waves W repeats that W times, one wave after the previous one was
fully answered. A gateway that runs one task per contextId must admit exactly
one request per wave (its turn has to outlast the burst: run the gateway with
--echo-delay and a message of a few words) and answer the other N-1 at once
with JSON-RPC -32004 CONTEXT_BUSY. The report gives per wave the answers by
class (admitted, busy, other errors, timeouts, HTTP 5xx) and the latency
p50/p90/p99/max of the busy replies and of all answers, timed from just before
each request is written to the end of its answer. Run the gateway with
--rate-limit 0, or the burst meets its per-peer rate limit. The client shares
the machine with the server: on a few cores the last of N senders queues
behind the others in the client as much as in the server, so with --baseline
every wave is also fired at an in-process bare echo server, which answers every
request at once, and the busy/baseline ratios are printed next to the absolute
figures. The command exits 1 if a wave had a timeout or an HTTP 5xx,
or if a target wave did not have exactly 1 admitted and N-1 busy; it says why.

Flags:
`
	benchHelpTail = `
Examples:
  gateway bench --concurrency 64 --duration 10s --baseline http://127.0.0.1:9900/
  gateway bench --dialect 1.0 --stream --concurrency 16 http://127.0.0.1:9900/
  gateway bench --concurrency 64 --contexts 1 --duration 5s http://127.0.0.1:9900/
  gateway bench --burst 1000 --waves 10 --baseline --message "a few words" http://127.0.0.1:9900/
`
)

// benchUsageError is a mistake on the `gateway bench` command line.
type benchUsageError struct{ err error }

func (e benchUsageError) Error() string {
	return "bench: " + strings.ReplaceAll(e.err.Error(), "\n", "; ")
}
func (e benchUsageError) Unwrap() error { return e.err }

// benchOptions are the parsed `gateway bench` flags and URL.
type benchOptions struct {
	cfg      loadgen.Config
	baseline bool
	rounds   int
	json     bool

	baselineURL string // --baseline-url: bench against this server instead of the in-process echo

	burst int // --burst: requests fired at once on one contextId; 0: the closed loop
	waves int // --waves: bursts, one after another

	binding string     // --binding: jsonrpc (POST URL) or grpc (the card's GRPC interface)
	llm     llmOptions // --profile llm (bench_llm.go)
}

// runBench implements `gateway bench [flags] URL`: it parses args, runs the
// load (or the interleaved comparison with --baseline) until done or ctx ends,
// and prints the report to stdout. --help prints the help to stdout and
// returns an error matching flag.ErrHelp; a bad command line returns a *flagError
// (flags) or a benchUsageError. Failed requests are part of the report, not an error.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := benchParse(args, stdout, stderr)
	if err != nil {
		return err
	}
	if opts.burst > 0 {
		return runBurst(ctx, opts, stdout, stderr)
	}
	if opts.llm.profile == "llm" {
		return runLLMProfile(ctx, opts.llm, opts.cfg.URL, opts.cfg.Token, stdout, stderr)
	}
	cfg := opts.cfg
	if opts.baseline {
		perRound := cfg.Warmup + cfg.Duration
		against := "an in-process baseline"
		if opts.baselineURL != "" {
			against = "the baseline " + opts.baselineURL
		}
		fmt.Fprintf(stderr, "bench: %d rounds against %s and against %s, %v each: about %v\n",
			opts.rounds, cfg.URL, against, perRound, 2*time.Duration(opts.rounds)*perRound)
		var c loadgen.Comparison
		var runErr error
		if opts.baselineURL != "" {
			c, runErr = loadgen.CompareWith(ctx, cfg, opts.baselineURL, opts.rounds)
		} else {
			c, runErr = loadgen.Compare(ctx, cfg, opts.rounds)
		}
		if errors.Is(runErr, loadgen.ErrInvalidConfig) {
			return benchUsageError{runErr}
		}
		if runErr == nil || len(c.Target) > 0 {
			if err := benchPrint(stdout, opts, c, c.WriteText); err != nil {
				return err
			}
		}
		return benchRunError(runErr)
	}
	if opts.binding == "grpc" {
		sender, addr, err := grpcSender(ctx, cfg.URL, cfg.Token)
		if err != nil {
			return err
		}
		defer sender.Close()
		cfg.Send = sender.Send
		fmt.Fprintf(stderr, "bench: gRPC SendMessage to %s (the GRPC interface of the card at %s)\n", addr, cfg.URL)
	}
	fmt.Fprintf(stderr, "bench: %s for %v after %v warmup\n", cfg.URL, cfg.Duration, cfg.Warmup)
	r, runErr := loadgen.Run(ctx, cfg)
	if errors.Is(runErr, loadgen.ErrInvalidConfig) {
		return benchUsageError{runErr}
	}
	if err := benchPrint(stdout, opts, r, r.WriteText); err != nil {
		return err
	}
	return benchRunError(runErr)
}

// benchRunError explains an error from a run that was cut short.
func benchRunError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("bench interrupted, figures above are partial: %w", err)
}

// benchParse parses args into options. Flags may come before or after the
// URL; everything after "--" is positional.
func benchParse(args []string, stdout, stderr io.Writer) (benchOptions, error) {
	var (
		o           benchOptions
		dialect     string
		concurrency int
	)
	fs := benchFlags(&o, &dialect, &concurrency)
	positional, err := parseFlags(fs, "bench", args, true, func() { benchHelp(fs, stdout) })
	if err != nil {
		return o, err // flag.ErrHelp, or a *flagError: one line
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := errors.Join(benchProblems(&o, positional, dialect, concurrency, set)...); err != nil {
		fmt.Fprintln(stderr, "usage: gateway bench [flags] URL   (see 'gateway bench --help')")
		return o, benchUsageError{err}
	}
	return o, nil
}

// benchFlags defines bench's flags on o (dialect and concurrency are checked before they
// go into o.cfg).
func benchFlags(o *benchOptions, dialect *string, concurrency *int) *flag.FlagSet {
	fs := newFlagSet("bench") // errors are returned; --help is printed by benchParse
	fs.IntVar(concurrency, "concurrency", 1, "run `N` workers, each with one request in flight")
	fs.DurationVar(&o.cfg.Duration, "duration", 10*time.Second, "measure for `D` (each round, with --baseline)")
	fs.StringVar(dialect, "dialect", "0.3", "speak dialect `V`: 0.3 (message/send, \"kind\" fields) or\n1.0 (SendMessage, ProtoJSON enums, header A2A-Version: 1.0)")
	fs.BoolVar(&o.cfg.Stream, "stream", false, "use message/stream / SendStreamingMessage over SSE, time each\nstream to its terminal event and report the time to first event")
	fs.IntVar(&o.cfg.Contexts, "contexts", 0, "spread requests over `N` contextIds (0: as many as --concurrency).\n"+
		"With N >= concurrency each worker uses its own ids, so no two\nin-flight requests share one; with 1 every request uses the same\n"+
		"contextId, and a gateway that runs one task per context answers\nthe overlapping ones with -32004")
	fs.BoolVar(&o.cfg.FreshContexts, "fresh-contexts", false, "give every request a contextId of its own, so that every request\nopens a new conversation (not with --contexts)")
	fs.DurationVar(&o.cfg.Warmup, "warmup", time.Second, "run unmeasured for `D` before each measurement")
	fs.StringVar(&o.cfg.Message, "message", "", "send `TEXT` in every message (empty: a 1 KiB sentence)")
	fs.StringVar(&o.cfg.Token, "token", "", "send \"Authorization: Bearer `T`\" with every request")
	fs.DurationVar(&o.cfg.Timeout, "timeout", 10*time.Second, "give each request at most `D`, including reading its stream")
	fs.BoolVar(&o.baseline, "baseline", false, "also bench an in-process net/http echo server in alternating\nrounds (with --burst: waves) and print the target/baseline ratios")
	fs.StringVar(&o.baselineURL, "baseline-url", "", "use the A2A server at `URL` as the baseline instead of the in-process\necho (implies --baseline); e.g. the same gateway with another lease")
	fs.IntVar(&o.rounds, "rounds", loadgen.DefaultRounds, "with --baseline, run `N` rounds of each side")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.IntVar(&o.burst, "burst", 0, "fire `N` requests at once on one contextId instead of the closed\nloop; expect 1 admitted and N-1 -32004 CONTEXT_BUSY (see above)")
	fs.IntVar(&o.waves, "waves", 1, "with --burst, fire `W` bursts one after another")
	fs.StringVar(&o.binding, "binding", "jsonrpc", "send over binding `B`: jsonrpc (POST to URL), http_json (v1.0 SendMessage\nas POST URL/message:send; the in-process baseline answers it too) or grpc\n(v1.0 SendMessage to the GRPC interface the card at URL lists, over one\nHTTP/2 connection; not with --stream, --burst or --baseline)")
	llmFlags(fs, &o.llm)
	return fs
}

// benchProblems completes o from the parsed flags (set: the names given) and returns
// every mistake found.
func benchProblems(o *benchOptions, positional []string, dialect string, concurrency int, set map[string]bool) []error {
	var problems []error
	switch len(positional) {
	case 0:
		problems = append(problems, errors.New("missing URL argument"))
	case 1:
		o.cfg.URL = positional[0]
	default:
		problems = append(problems, fmt.Errorf("want one URL argument, got %d: %q", len(positional), positional))
	}
	if concurrency < 1 {
		problems = append(problems, fmt.Errorf("--concurrency %d: must be at least 1", concurrency))
	}
	o.cfg.Concurrency = concurrency
	if o.cfg.Duration <= 0 {
		problems = append(problems, fmt.Errorf("--duration %v: must be positive", o.cfg.Duration))
	}
	if o.cfg.Timeout <= 0 {
		problems = append(problems, fmt.Errorf("--timeout %v: must be positive", o.cfg.Timeout))
	}
	if o.cfg.Contexts == 0 {
		o.cfg.Contexts = concurrency
	}
	if o.cfg.FreshContexts && set["contexts"] {
		problems = append(problems, errors.New("--fresh-contexts and --contexts exclude each other"))
	}
	if o.cfg.Message == "" {
		o.cfg.Message = loadgen.DefaultMessage
	}
	o.cfg.HTTPJSON = o.binding == "http_json"
	switch d := loadgen.Dialect(dialect); {
	case o.cfg.HTTPJSON && !set["dialect"]:
		o.cfg.Dialect = loadgen.DialectV10 // the binding is v1.0
	case d == loadgen.DialectV03, d == loadgen.DialectV10:
		o.cfg.Dialect = d
	default:
		problems = append(problems, fmt.Errorf("--dialect %q: want 1.0 or 0.3", dialect))
	}
	if o.baselineURL != "" {
		o.baseline = true
	}
	if set["rounds"] && !o.baseline {
		problems = append(problems, errors.New("--rounds needs --baseline"))
	}
	if o.rounds < 1 {
		problems = append(problems, fmt.Errorf("--rounds %d: must be at least 1", o.rounds))
	}
	problems = append(problems, burstProblems(*o, set)...)
	problems = append(problems, bindingProblems(*o)...)
	if p := o.llm.profile; p != "" && p != "llm" {
		problems = append(problems, fmt.Errorf("--profile %q: the one profile is llm", p))
	}
	if len(problems) == 0 && o.burst == 0 {
		if err := o.cfg.Validate(); err != nil {
			problems = append(problems, err)
		}
	}
	return problems
}

// benchHelp writes the --help text, listing fs's flags with two dashes.
func benchHelp(fs *flag.FlagSet, w io.Writer) {
	var b strings.Builder
	b.WriteString(benchHelpHead)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			name = " " + name
		}
		switch f.DefValue {
		case "", "0", "false":
		default:
			usage += " (default " + f.DefValue + ")"
		}
		for i, line := range strings.Split(usage, "\n") {
			if i == 0 {
				fmt.Fprintf(tw, "  --%s%s\t%s\n", f.Name, name, line)
			} else {
				fmt.Fprintf(tw, "\t%s\n", line)
			}
		}
	})
	_ = tw.Flush()
	b.WriteString(benchHelpTail)
	_, _ = io.WriteString(w, b.String())
}

// benchPrint writes v as text with writeText, or as JSON next to the
// settings it ran with when --json is set.
func benchPrint(w io.Writer, o benchOptions, v any, writeText func(io.Writer) error) error {
	cfg := o.cfg
	if o.json {
		settings := map[string]any{
			"url":            cfg.URL,
			"dialect":        string(cfg.Dialect),
			"http_json":      cfg.HTTPJSON,
			"concurrency":    cfg.Concurrency,
			"contexts":       cfg.Contexts,
			"fresh_contexts": cfg.FreshContexts,
			"stream":         cfg.Stream,
			"duration_s":     cfg.Duration.Seconds(),
			"warmup_s":       cfg.Warmup.Seconds(),
			"timeout_s":      cfg.Timeout.Seconds(),
			"message_bytes":  len(cfg.Message),
			"token_set":      cfg.Token != "",
			"binding":        o.binding,
		}
		out := map[string]any{"config": settings}
		if o.baseline {
			settings["rounds"] = o.rounds
			out["comparison"] = v
		} else {
			out["report"] = v
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	mode, binding := "send", "JSON-RPC"
	if cfg.Stream {
		mode = "stream"
	} else if o.binding == "grpc" {
		mode = "send over gRPC (the card's GRPC interface)"
	}
	if cfg.HTTPJSON {
		mode, binding = "send over HTTP+JSON (POST /message:send)", "HTTP+JSON"
	}
	contexts := fmt.Sprintf("contexts %d", cfg.Contexts)
	if cfg.FreshContexts {
		contexts = "a fresh contextId per request"
	}
	header := fmt.Sprintf("target       %s\nsettings     dialect %s, %s, concurrency %d, %s, %v per run after %v warmup\n",
		cfg.URL, cfg.Dialect, mode, cfg.Concurrency, contexts, cfg.Duration, cfg.Warmup)
	if o.baseline {
		if o.baselineURL != "" {
			header += fmt.Sprintf("baseline     %s, %d alternating rounds\n\n", o.baselineURL, o.rounds)
		} else {
			header += fmt.Sprintf("baseline     in-process net/http %s echo, %d alternating rounds\n\n", binding, o.rounds)
		}
	}
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	return writeText(w)
}

// burstProblems checks the --burst flags against the rest: the closed loop's
// flags have no meaning for a burst.
func burstProblems(o benchOptions, set map[string]bool) []error {
	var problems []error
	if o.burst < 0 {
		problems = append(problems, fmt.Errorf("--burst %d: must be positive (0: no burst)", o.burst))
	}
	if o.waves < 1 {
		problems = append(problems, fmt.Errorf("--waves %d: must be at least 1", o.waves))
	}
	if o.burst == 0 {
		if set["waves"] {
			problems = append(problems, errors.New("--waves needs --burst"))
		}
		return problems
	}
	for _, name := range []string{"concurrency", "contexts", "fresh-contexts", "duration", "warmup", "stream", "rounds", "baseline-url", "binding"} {
		if set[name] {
			problems = append(problems, fmt.Errorf("--%s does not apply to --burst", name))
		}
	}
	return problems
}

// runBurst runs `gateway bench --burst N`: the waves, the report, and the
// busy-rejection check, whose failure is the returned error (exit 1).
func runBurst(ctx context.Context, o benchOptions, stdout, stderr io.Writer) error {
	bc := loadgen.BurstConfig{
		URL: o.cfg.URL, Senders: o.burst, Waves: o.waves, Dialect: o.cfg.Dialect,
		Message: o.cfg.Message, Token: o.cfg.Token, Timeout: o.cfg.Timeout, Baseline: o.baseline,
	}
	also := ""
	if o.baseline {
		also = ", each followed by the same wave against an in-process baseline"
	}
	fmt.Fprintf(stderr, "bench: %d waves of %d requests at once on one contextId against %s%s\n", o.waves, o.burst, o.cfg.URL, also)
	r, runErr := loadgen.Burst(ctx, bc)
	if errors.Is(runErr, loadgen.ErrInvalidConfig) {
		return benchUsageError{runErr}
	}
	if runErr != nil && len(r.Target) == 0 {
		return benchRunError(runErr)
	}
	checkErr := r.Check()
	if err := burstPrint(stdout, o, r, checkErr); err != nil {
		return err
	}
	if runErr != nil {
		return benchRunError(runErr)
	}
	return checkErr
}

// burstPrint writes the burst report as text, or as JSON next to the
// settings it ran with when --json is set; both end with the check's verdict.
func burstPrint(w io.Writer, o benchOptions, r loadgen.BurstReport, checkErr error) error {
	cfg := o.cfg
	verdict := fmt.Sprintf("ok: every target wave had 1 admitted and %d busy, no wave a timeout or an HTTP 5xx", o.burst-1)
	if checkErr != nil {
		verdict = "FAILED: " + strings.ReplaceAll(checkErr.Error(), "\n", "; ")
	}
	if o.json {
		out := map[string]any{
			"config": map[string]any{
				"url":           cfg.URL,
				"dialect":       string(cfg.Dialect),
				"burst":         o.burst,
				"waves":         o.waves,
				"baseline":      o.baseline,
				"timeout_s":     cfg.Timeout.Seconds(),
				"message_bytes": len(cfg.Message),
				"token_set":     cfg.Token != "",
			},
			"burst": r,
			"check": verdict,
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	header := fmt.Sprintf("target       %s\nsettings     dialect %s, burst %d on one contextId, %d waves, timeout %v\n",
		cfg.URL, cfg.Dialect, o.burst, o.waves, cfg.Timeout)
	if o.baseline {
		header += "baseline     in-process net/http JSON-RPC echo, a wave after each target wave\n"
	}
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	if err := r.WriteText(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "check        %s\n", verdict)
	return err
}
