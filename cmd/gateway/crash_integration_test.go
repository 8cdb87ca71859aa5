//go:build integration

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// buildGateway builds the real binary once per test binary.
var buildGateway = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gateway-bin-")
	if err != nil {
		return "", err
	}
	builtBinaryDir.Lock()
	builtBinaryDir.dir = dir // removed by TestMain
	builtBinaryDir.Unlock()
	bin := filepath.Join(dir, "gateway")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// gatewayProc is a gateway running as a child process.
type gatewayProc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}

	mu       sync.Mutex
	warnings []string // its WARN and ERROR log lines so far, and lines that are not JSON
}

// startProc starts `gateway serve` on a free port and waits until it listens.
func startProc(t *testing.T, bin string, args ...string) *gatewayProc {
	t.Helper()
	return startCmd(t, exec.Command(bin, serveArgs(args...)...))
}

// serveArgs are the arguments of startProc's `gateway serve`, args last.
func serveArgs(args ...string) []string {
	return append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--rate-limit", "0"}, args...)
}

// startCmd starts cmd, a `gateway serve` with serveArgs, and waits until it listens.
func startCmd(t *testing.T, cmd *exec.Cmd) *gatewayProc {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &gatewayProc{cmd: cmd, done: make(chan struct{})}
	addrCh := make(chan string, 1)
	go func() { // reads the child's log until it exits
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct {
				Level string `json:"level"`
				Msg   string `json:"msg"`
				Addr  string `json:"addr"`
			}
			err := json.Unmarshal(sc.Bytes(), &line)
			if err != nil || line.Level == "WARN" || line.Level == "ERROR" { // a fatal error is plain text
				p.mu.Lock()
				p.warnings = append(p.warnings, sc.Text())
				p.mu.Unlock()
			}
			if line.Msg == "gateway listening" {
				addrCh <- line.Addr
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case p.addr = <-addrCh:
	case <-p.done:
		t.Fatalf("gateway exited before listening; it said:\n%s", strings.Join(p.logged(), "\n"))
	case <-time.After(time.Until(testutil.Deadline(t))):
		_ = cmd.Process.Kill()
		t.Fatal("gateway did not start listening")
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done })
	return p
}

// logged returns the WARN and ERROR lines the gateway logged so far (as JSON), and the
// lines it wrote that are not JSON (a fatal error).
func (p *gatewayProc) logged() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.warnings)
}

func (p *gatewayProc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(time.Until(testutil.Deadline(t))):
		t.Fatalf("gateway did not exit after %v", sig)
	}
}

type acked struct {
	contextID, text, taskID string
	reply                   string // "" when the reply was not returned before the kill
}

// sendLoop sends messages on one context until an error; it records what was acknowledged.
func sendLoop(ctx context.Context, c *http.Client, url, contextID string, stream bool, mu *sync.Mutex, out *[]acked) {
	for k := 0; ; k++ {
		text := fmt.Sprintf("%s message %d", contextID, k)
		method := "message/send"
		if stream {
			method = "message/stream"
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": k, "method": method, "params": map[string]any{
			"message": map[string]any{"kind": "message", "role": "user", "messageId": fmt.Sprintf("%s-%d", contextID, k),
				"contextId": contextID, "parts": []any{map[string]any{"kind": "text", "text": text}}}}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return
		}
		a, ok := readAck(resp, stream)
		resp.Body.Close()
		if a.taskID != "" {
			a.contextID, a.text = contextID, text
			mu.Lock()
			*out = append(*out, a)
			mu.Unlock()
		}
		if !ok {
			return
		}
	}
}

// readAck reads a response: for a stream, the first event acknowledges the message and
// the final one returns the reply.
func readAck(resp *http.Response, stream bool) (acked, bool) {
	type task struct {
		ID     string `json:"id"`
		TaskID string `json:"taskId"`
		Kind   string `json:"kind"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		Final     bool `json:"final"`
		Artifacts []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifacts"`
		Artifact struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifact"`
	}
	var a acked
	if !stream {
		var env struct {
			Result *task `json:"result"`
		}
		if json.NewDecoder(resp.Body).Decode(&env) != nil || env.Result == nil {
			return a, false
		}
		a.taskID = env.Result.ID
		if env.Result.Status.State == "completed" && len(env.Result.Artifacts) == 1 {
			a.reply = env.Result.Artifacts[0].Parts[0].Text
		}
		return a, true
	}
	sc := bufio.NewScanner(resp.Body)
	var reply strings.Builder
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var env struct {
			Result *task `json:"result"`
		}
		if json.Unmarshal([]byte(data), &env) != nil || env.Result == nil {
			return a, false
		}
		switch env.Result.Kind {
		case "task":
			a.taskID = env.Result.ID
		case "artifact-update":
			reply.WriteString(env.Result.Artifact.Parts[0].Text)
		case "status-update":
			if env.Result.Final {
				if env.Result.Status.State == "completed" {
					a.reply = reply.String()
				}
				return a, true
			}
		}
	}
	return a, false
}

// sendUntilKill runs senders sendLoops at once (sender(g): the URL, contextId and
// whether to stream of sender g) until n sends are acknowledged, then kills p with
// SIGKILL, stops the senders and returns what was acknowledged.
func sendUntilKill(t *testing.T, c *http.Client, p *gatewayProc, senders, n int, sender func(g int) (url, contextID string, stream bool)) []acked {
	t.Helper()
	var mu sync.Mutex
	var got []acked
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	for g := range senders {
		url, contextID, stream := sender(g)
		wg.Go(func() { sendLoop(ctx, c, url, contextID, stream, &mu, &got) })
	}
	testutil.WaitFor(t, fmt.Sprintf("%d acknowledged sends", n), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= n
	})
	p.stop(t, syscall.SIGKILL)
	cancel()
	wg.Wait() // no sender appends to got any more
	c.CloseIdleConnections()
	return got
}

// TestCrashKeepsAcknowledged: SIGKILL the real binary under concurrent load at a random
// moment; after a restart every acknowledged message and every returned reply is in the
// ledger, and `gateway ledger verify` passes.
func TestCrashKeepsAcknowledged(t *testing.T) {
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	c := newHTTPClient(t)
	total := 0
	for iter := range 4 {
		p := startProc(t, bin, "--data-dir", dataDir)
		url := "http://" + p.addr + "/"
		// A random moment: after a random number (1..40) of acknowledged sends, so that
		// something was acknowledged however slow the machine, with more in flight.
		got := sendUntilKill(t, c, p, 12, 1+rand.IntN(40), func(g int) (string, string, bool) {
			return url, fmt.Sprintf("crash-%d-%d", iter, g), g%3 == 0
		})
		if len(got) == 0 {
			t.Fatalf("iteration %d: nothing was acknowledged before the kill", iter)
		}
		total += len(got)

		p2 := startProc(t, bin, "--data-dir", dataDir)
		url2 := "http://" + p2.addr + "/"
		replies := 0
		for _, a := range got {
			r := postRPC(t, c, url2, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, a.taskID))
			if r.Error != nil {
				t.Fatalf("iteration %d: acknowledged task %s (%q) lost after kill: %+v", iter, a.taskID, a.text, r.Error)
			}
			s := string(r.Result)
			if !strings.Contains(s, fmt.Sprintf("%q", a.text)) {
				t.Fatalf("iteration %d: task %s lacks its acknowledged message %q: %s", iter, a.taskID, a.text, s)
			}
			if a.reply != "" {
				replies++
				if !strings.Contains(s, fmt.Sprintf("%q", a.reply)) || !strings.Contains(s, `"completed"`) {
					t.Fatalf("iteration %d: task %s lacks its returned reply %q: %s", iter, a.taskID, a.reply, s)
				}
			}
		}
		t.Logf("iteration %d: %d acknowledged messages (%d with replies) all present after SIGKILL", iter, len(got), replies)
		p2.stop(t, syscall.SIGTERM)
		verify := exec.Command(bin, "ledger", "verify", "--data-dir", dataDir, "--server", "http://127.0.0.1:1")
		out, err := verify.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ok:") {
			t.Fatalf("iteration %d: ledger verify: %v\n%s", iter, err, out)
		}
	}
	t.Logf("%d acknowledged messages checked over 4 kills", total)
}
