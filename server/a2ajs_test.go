package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// a2ajsVersion is the stock a2a-js SDK the interop test installs (npm), v1.0 with its
// REST transport.
const a2ajsVersion = "1.3.0"

// a2ajsDir returns a directory where @a2a-js/sdk@a2ajsVersion is installed: the user
// cache's copy, installed there with npm the first time (into a temporary directory
// renamed into place, so that concurrent runs never see half an install). The test is
// Unavailable without node and npm, or when the install fails (no registry).
func a2ajsDir(t *testing.T) string {
	t.Helper()
	for _, prog := range []string{"node", "npm"} {
		if _, err := exec.LookPath(prog); err != nil {
			testutil.Unavailable(t, testutil.DepNode, prog+" is not installed: the a2a-js interop test needs node and npm (v20 or later)")
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "a2a-gateway-test", "a2a-js-sdk-"+a2ajsVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", "@a2a-js/sdk@"+a2ajsVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		testutil.Unavailable(t, testutil.DepNode, fmt.Sprintf("npm install @a2a-js/sdk@%s failed (is the npm registry reachable?): %v: %s", a2ajsVersion, err, out))
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		if _, serr := os.Stat(dir); serr != nil { // another run put it there first: fine
			t.Fatal(err)
		}
	}
	return dir
}

// heldAgent is the echo agent, except that a turn whose text starts with "slow" emits
// its first word, then waits until release is closed before the rest.
type heldAgent struct{ release chan struct{} }

func (a heldAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	if !strings.HasPrefix(t.Text, "slow") {
		return agent.Echo{}.Reply(ctx, t, emit)
	}
	for i, w := range agent.SplitWords("echo: " + t.Text) {
		if i == 1 {
			select {
			case <-a.release:
			case <-ctx.Done():
				return agent.Result{}, ctx.Err()
			}
		}
		if err := emit(w); err != nil {
			return agent.Result{}, err
		}
	}
	return agent.Result{}, nil
}

// jsStep is one line the a2a-js script prints.
type jsStep struct {
	Step, Transport, ID, State, Reply, Name, Message, Turn1 string
	Stream, Resubscribe                                     json.RawMessage
	Listed                                                  []string
}

type jsEvent struct{ Kind, ID, State, Text string }

// TestA2AJSRestInterop (issue #39 item 5): the stock a2a-js client, choosing the card's
// HTTP+JSON interface, holds a multi-turn conversation with the gateway: a blocking
// send; a streamed send joined by a resubscribe while it runs (both follow it to the
// end, in order, without a gap); a third turn in the same context; ListTasks and GetTask;
// and an unknown task read as the SDK's TaskNotFound error.
func TestA2AJSRestInterop(t *testing.T) {
	t.Parallel()
	dir := a2ajsDir(t)
	script, err := os.ReadFile(filepath.Join("testdata", "a2ajs_rest.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(dir, fmt.Sprintf("a2ajs_rest_%d.mjs", os.Getpid()))
	if err := os.WriteFile(scriptPath, script, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(scriptPath) })
	release := make(chan struct{})
	s := startServer(t, testConfig(t), WithAgent(heldAgent{release: release}))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", scriptPath, strings.TrimSuffix(s.URL(), "/"))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	steps := readJSSteps(t, stdout, stdin, release)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node: %v; stderr:\n%s", err, stderr.String())
	}
	checkJSSteps(t, steps)
}

// readJSSteps reads the script's steps; on "subscribed" it lets the held turn go on and
// tells the script to read on.
func readJSSteps(t *testing.T, stdout io.Reader, stdin io.WriteCloser, release chan struct{}) map[string]jsStep {
	t.Helper()
	defer stdin.Close()
	steps := map[string]jsStep{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var st jsStep
		if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
			t.Errorf("script line %q: %v", sc.Text(), err)
			continue
		}
		t.Logf("a2a-js: %s", sc.Text())
		steps[st.Step] = st
		if st.Step == "subscribed" {
			close(release)
			if _, err := io.WriteString(stdin, "go\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return steps
}

func checkJSSteps(t *testing.T, steps map[string]jsStep) {
	t.Helper()
	if got := steps["card"].Transport; got != "HTTP+JSON" {
		t.Errorf("the client chose %q, want HTTP+JSON", got)
	}
	t1, t3 := steps["turn1"], steps["turn3"]
	if t1.State != "TASK_STATE_COMPLETED" || t1.Reply != "echo: first turn" {
		t.Errorf("turn 1: %+v", t1)
	}
	var streamed, resub []jsEvent
	t2 := steps["turn2"]
	if json.Unmarshal(t2.Stream, &streamed) != nil || json.Unmarshal(t2.Resubscribe, &resub) != nil || len(streamed) == 0 || len(resub) == 0 {
		t.Fatalf("turn 2: %+v", t2)
	}
	text := func(evs []jsEvent) string {
		var b strings.Builder
		for _, e := range evs {
			b.WriteString(e.Text)
		}
		return b.String()
	}
	// The stream's Task came before; its first word with it or after, the rest after.
	if got := text(streamed); got != "echo: slow second turn" {
		t.Errorf("turn 2 streamed text %q", got)
	}
	if got := text(resub); !strings.HasSuffix("echo: slow second turn", got) || !strings.Contains(got, "second turn") {
		t.Errorf("turn 2 resubscribed text %q, want the reply's rest", got)
	}
	for name, evs := range map[string][]jsEvent{"stream": streamed, "resubscribe": resub} {
		if last := evs[len(evs)-1]; last.Kind != "status" || last.State != "TASK_STATE_COMPLETED" {
			t.Errorf("turn 2 %s ends with %+v, want the COMPLETED status", name, last)
		}
	}
	if t3.State != "TASK_STATE_COMPLETED" || t3.Reply != "echo: third turn" || len(t3.Listed) != 3 || t3.Turn1 != "TASK_STATE_COMPLETED" {
		t.Errorf("turn 3: %+v, want completed, the context's three tasks listed", t3)
	}
	if e := steps["error"]; !strings.Contains(e.Name, "TaskNotFound") {
		t.Errorf("GetTask(unknown) = %+v, want the SDK's TaskNotFound error", e)
	}
}
