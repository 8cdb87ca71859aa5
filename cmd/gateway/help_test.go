package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/server"
)

// buildCLI builds the real gateway binary into a temp dir of t. A recursion in the
// binary then ends in its own process (a stack overflow there, or the timeout of
// runCLIProc), and fails the test instead of crashing the test binary.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gateway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// cappedBuffer keeps the first max bytes written and counts them all.
type cappedBuffer struct {
	buf   bytes.Buffer
	max   int
	total int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.total += len(p)
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// cliResult is what one run of the binary did.
type cliResult struct {
	code           int
	stdout, stderr *cappedBuffer
}

// runCLIProc runs bin with args in an empty working directory (no ./gateway.yaml, no
// ./data) and without GATEWAY_* variables, for at most 20 s.
func runCLIProc(t *testing.T, bin string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GATEWAY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	res := cliResult{stdout: &cappedBuffer{max: 64 << 10}, stderr: &cappedBuffer{max: 64 << 10}}
	cmd.Stdout, cmd.Stderr = res.stdout, res.stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("gateway %q did not exit within 20 s", args)
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("gateway %q: %v", args, err)
	}
	return res
}

// cliCase is one command line and what it must do: the exit status, the stream its
// output goes to (the other one stays empty), what that output says, and its size limit.
type cliCase struct {
	args      []string
	code      int
	stdout    bool     // the output goes to stdout; else to stderr
	contains  []string // each must appear in the output
	lacks     []string // none may appear in the output
	maxBytes  int
	notSuffix string // the output must not end with this
}

func (c cliCase) check(t *testing.T, res cliResult) {
	t.Helper()
	out, other, name := res.stdout, res.stderr, "stdout"
	if !c.stdout {
		out, other, name = res.stderr, res.stdout, "stderr"
	}
	if res.code != c.code {
		t.Errorf("exit status %d, want %d", res.code, c.code)
	}
	if other.total != 0 {
		t.Errorf("the other stream got %d bytes, want none; it begins:\n%.600s", other.total, other.buf.String())
	}
	if out.total == 0 || out.total > c.maxBytes {
		t.Errorf("%s got %d bytes, want 1 to %d; it begins:\n%.600s", name, out.total, c.maxBytes, out.buf.String())
	}
	text := out.buf.String()
	for _, w := range c.contains {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%.2000s", name, w, text)
		}
	}
	for _, w := range c.lacks {
		if strings.Contains(text, w) {
			t.Errorf("%s has %q:\n%.2000s", name, w, text)
		}
	}
	if c.notSuffix != "" && strings.HasSuffix(text, c.notSuffix) {
		t.Errorf("%s ends with %q:\n%s", name, c.notSuffix, text)
	}
}

// helpCases: every spelling of help (asked for: stdout, exit 0, bounded), issue #15
// item 11 (help help, help --help and -h -h recursed to a stack overflow) and item 12
// (help on stderr for most commands).
func helpCases() []cliCase {
	const helpMax = 16 << 10
	top := []string{"Usage:", "gateway serve", "conversations list|show|export|replay", "gateway ledger verify", "gateway help"}
	var cases []cliCase
	for _, args := range [][]string{
		{"help"}, {"-h"}, {"--help"}, {"-help"},
		{"help", "help"}, {"help", "--help"}, {"help", "-h"}, {"help", "-help"},
		{"-h", "-h"}, {"--help", "--help"}, {"--help", "help"}, {"-h", "help", "help"},
	} {
		cases = append(cases, cliCase{args: args, code: 0, stdout: true, contains: top, maxBytes: helpMax})
	}
	commands := map[string]string{
		"serve":                 "Usage: gateway serve [flags]",
		"bench":                 "Usage: gateway bench [flags] URL",
		"send":                  "Usage: gateway send [flags] TARGET",
		"conversations":         "Usage: gateway conversations COMMAND",
		"ledger":                "Usage: gateway ledger COMMAND",
		"conversations list":    "Usage: gateway conversations list [flags]",
		"conversations show":    "Usage: gateway conversations show [flags] CONTEXT_ID",
		"conversations export":  "Usage: gateway conversations export [flags] CONTEXT_ID",
		"conversations replay":  "Usage: gateway conversations replay [flags] CONTEXT_ID",
		"ledger verify":         "Usage: gateway ledger verify [flags] [CONTEXT_ID]",
		"conversations help":    "Usage: gateway conversations COMMAND",
		"ledger help":           "Usage: gateway ledger COMMAND",
		"conversations -h help": "Usage: gateway conversations COMMAND",
	}
	for cmd, head := range commands {
		words := strings.Fields(cmd)
		for _, args := range [][]string{
			append([]string{"help"}, words...),
			append(append([]string{}, words...), "--help"),
			append(append([]string{}, words...), "-h"),
			append(append([]string{}, words...), "-help"),
		} {
			cases = append(cases, cliCase{args: args, code: 0, stdout: true, contains: []string{head}, maxBytes: helpMax})
		}
	}
	// ledger's overview lists its commands and has no flags of its own (it ended with an
	// empty "Flags:").
	cases = append(cases, cliCase{args: []string{"ledger", "--help"}, code: 0, stdout: true,
		contains: []string{"verify"}, notSuffix: "Flags:\n", maxBytes: helpMax})
	return cases
}

// usageCases: usage errors go to stderr with exit status 2, in a line or two (issue #15
// item 12: an unknown flag printed the whole help, 6 KB).
func usageCases() []cliCase {
	const lineMax = 400
	return []cliCase{
		{args: []string{"help", "nope"}, code: 2, contains: []string{`unknown command "nope"`, "serve", "conversations", "gateway --help"}, maxBytes: lineMax},
		{args: []string{"nope"}, code: 2, contains: []string{`unknown command "nope"`, "serve", "gateway --help"}, maxBytes: lineMax},
		{args: []string{"help", "--port"}, code: 2, contains: []string{`unknown command "--port"`}, maxBytes: lineMax},
		{args: []string{}, code: 2, contains: []string{"Usage:", "gateway serve", "no command given"}, maxBytes: 4 << 10},
		{args: []string{"serve", "--port", "9901"}, code: 2, contains: []string{"unknown flag --port", "did you mean --addr?", "'gateway serve --help'"}, lacks: []string{"Flags:"}, maxBytes: lineMax},
		{args: []string{"serve", "--data-dri", "x"}, code: 2, contains: []string{"unknown flag --data-dri", "did you mean --data-dir?"}, maxBytes: lineMax},
		{args: []string{"serve", "--log-level", "verbose"}, code: 2, contains: []string{`"verbose"`, "log-level", "debug, info, warn or error", "'gateway serve --help'"}, lacks: []string{"Flags:"}, maxBytes: lineMax},
		{args: []string{"serve", "--frobnicate"}, code: 2, contains: []string{"unknown flag --frobnicate", "'gateway serve --help'"}, lacks: []string{"did you mean"}, maxBytes: lineMax},
		{args: []string{"bench", "--concurency", "2", "http://127.0.0.1:1/"}, code: 2, contains: []string{"unknown flag --concurency", "did you mean --concurrency?", "'gateway bench --help'"}, maxBytes: lineMax},
		{args: []string{"send", "--contxt", "c1", "peer", "hi"}, code: 2, contains: []string{"unknown flag --contxt", "did you mean --context?", "'gateway send --help'"}, maxBytes: lineMax},
		{args: []string{"conversations", "list", "--port", "1"}, code: 2, contains: []string{"unknown flag --port", "did you mean --server?", "'gateway conversations list --help'"}, maxBytes: lineMax},
		{args: []string{"conversations", "show", "ctx", "--jsn"}, code: 2, contains: []string{"unknown flag --jsn", "did you mean --json?", "'gateway conversations show --help'"}, maxBytes: lineMax},
		{args: []string{"ledger", "verify", "--verbose"}, code: 2, contains: []string{"unknown flag --verbose", "'gateway ledger verify --help'"}, maxBytes: lineMax},
		{args: []string{"ledger", "check"}, code: 2, contains: []string{`unknown command "check"`, "verify", "'gateway ledger --help'"}, lacks: []string{"needs a command"}, maxBytes: lineMax},
		{args: []string{"conversations", "frob"}, code: 2, contains: []string{`unknown command "frob"`, "list, show, export, replay"}, maxBytes: lineMax},
		{args: []string{"ledger"}, code: 2, contains: []string{"ledger needs a command", "verify"}, maxBytes: 4 << 10},
		{args: []string{"conversations"}, code: 2, contains: []string{"conversations needs a command", "replay"}, maxBytes: 4 << 10},
	}
}

// TestCLIHelpAndUsage runs the real binary on every spelling of help and on usage
// mistakes (issue #15 items 11 and 12).
func TestCLIHelpAndUsage(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	// One child at a time: before the fix a recursing help took 1 GB of stack.
	for _, c := range append(helpCases(), usageCases()...) {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			c.check(t, runCLIProc(t, bin, c.args...))
		})
	}
}

// TestFlagSuggestion: the suggested flag exists and is the closest in name or meaning.
func TestFlagSuggestion(t *testing.T) {
	t.Parallel()
	var cfg server.Config
	fs := newFlagSet("serve")
	bindServe(fs, func(string) (string, bool) { return "", false }, nil, &cfg)
	tests := []struct{ name, want string }{
		{"port", "addr"}, {"listen", "addr"}, {"adr", "addr"}, {"data", "data-dir"},
		{"datadir", "data-dir"}, {"verbose", "log-level"}, {"loglevel", "log-level"},
		{"max-part", "max-parts"}, {"busy-polcy", "busy-policy"}, {"token", "admin-token"},
		{"model", "agent-model"}, {"zzzzzz", ""}, {"x", ""},
	}
	for _, tt := range tests {
		if got := suggestFlag(fs, tt.name); got != tt.want {
			t.Errorf("suggestFlag(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestUnknownFlag: the scan reads a command line as fs.Parse does, so a flag's value or
// a positional argument that looks like a flag is not taken for an unknown flag.
func TestUnknownFlag(t *testing.T) {
	t.Parallel()
	fs := newFlagSet("t")
	fs.String("message", "", "")
	fs.Bool("json", false, "")
	tests := []struct {
		args         []string
		interspersed bool
		want         string
	}{
		{[]string{"--message", "--port", "x"}, true, ""},
		{[]string{"--message=--port", "--port"}, true, "port"},
		{[]string{"--json", "--port"}, true, "port"},
		{[]string{"-json=true", "-port=1"}, true, "port"},
		{[]string{"x", "--port"}, true, "port"},
		{[]string{"x", "--port"}, false, ""},
		{[]string{"--", "--port"}, true, ""},
		{[]string{"-", "--port"}, false, ""},
		{[]string{"--help", "--port"}, true, ""},
		{[]string{"-h"}, true, ""},
		{[]string{"---port"}, true, ""},
	}
	for _, tt := range tests {
		if got, _ := unknownFlag(fs, tt.args, tt.interspersed); got != tt.want {
			t.Errorf("unknownFlag(%q, interspersed %v) = %q, want %q", tt.args, tt.interspersed, got, tt.want)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestConsoleIsPointedTo (issue #35 item 10): nothing pointed a newcomer to the
// operator console. `serve --help` names /console, GET / links it with the URL the
// request reached, and the start-up log line (what `make run` shows) gives its URL.
func TestConsoleIsPointedTo(t *testing.T) {
	t.Parallel()
	stdout, _, err := runCLI(t, "serve", "--help")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stdout, "GET  /console") {
		t.Errorf("serve --help (err %v) does not name GET /console:\n%s", err, stdout)
	}

	var logs lockedBuffer
	s, err := server.Open(t.Context(), testConfig(t), slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close() error = %v", err)
		}
	})
	console := s.URL() + "console"
	var listening map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"gateway listening"`) {
			_ = json.Unmarshal([]byte(line), &listening)
		}
	}
	if listening["console"] != console {
		t.Errorf("the start-up log line %v has console %v, want %q", listening, listening["console"], console)
	}

	resp, err := newHTTPClient(t).Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(body), "GET "+console) {
		t.Errorf("GET / does not link the console %q:\n%s", console, body)
	}
}

// TestEchoDelayTextIsTrue (issue #35 item 10): the README, serve --help and the example
// config said the echo agent streams "one chunk per word", which holds only with a
// pause: at the default --echo-delay 0 the words arrive faster than a commit and a
// stream carries one commit's text per chunk, so the reply usually comes in one chunk.
// Each of the three says what happens with and without the pause.
func TestEchoDelayTextIsTrue(t *testing.T) {
	t.Parallel()
	help, _, _ := runCLI(t, "serve", "--help")
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "deploy", "gateway.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"serve --help": help, "README.md": string(readme), "deploy/gateway.example.yaml": string(example)} {
		flat := strings.Join(strings.Fields(text), " ")
		if strings.Contains(flat, "one chunk per word") {
			t.Errorf("%s still says the echo agent streams one chunk per word (false at --echo-delay 0)", name)
		}
		if !strings.Contains(flat, "each word streams as its own chunk") || !strings.Contains(flat, "usually in one chunk") {
			t.Errorf("%s does not say that with a pause each word streams as its own chunk, and without one the reply usually in one chunk", name)
		}
	}
}
