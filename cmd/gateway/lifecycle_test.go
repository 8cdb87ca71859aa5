//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startedProc is a command started in its own process group whose stderr is read for
// the gateway's "gateway listening" log line.
type startedProc struct {
	cmd    *exec.Cmd
	addr   string
	done   chan struct{} // closed when the process has exited (err set)
	err    error
	mu     sync.Mutex
	stderr bytes.Buffer // everything the process wrote on stderr
}

// startListening starts cmd (with the GATEWAY_* variables of env added to the test's
// environment) and waits until the gateway in it logs the address it listens on.
func startListening(t *testing.T, cmd *exec.Cmd, env ...string) *startedProc {
	t.Helper()
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // signals go to the whole group, as a terminal's Ctrl-C does
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &startedProc{cmd: cmd, done: make(chan struct{})}
	addrCh := make(chan string, 1)
	go func() { // exits when the process has exited and closed its stderr
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.Write(sc.Bytes())
			p.stderr.WriteByte('\n')
			p.mu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "gateway listening" {
				addrCh <- line.Addr
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		p.err = cmd.Wait()
	}()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-p.done })
	select {
	case p.addr = <-addrCh:
	case <-p.done:
		t.Fatalf("%v exited before listening: %v\n%s", cmd.Args, p.err, p.log())
	case <-time.After(3 * time.Minute):
		t.Fatalf("%v did not start listening", cmd.Args)
	}
	return p
}

func (p *startedProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitReady polls GET /readyz until it answers 200.
func (p *startedProc) waitReady(t *testing.T) {
	t.Helper()
	c := newHTTPClient(t)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		if resp, err := c.Get("http://" + p.addr + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("/readyz of %s did not answer 200", p.addr)
		}
	}
}

// interrupt sends SIGINT to the process group, as Ctrl-C in a terminal does, and
// returns how the process ended: its exit status, or the signal that ended it.
func (p *startedProc) interrupt(t *testing.T) (code int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("%v did not exit after SIGINT\n%s", p.cmd.Args, p.log())
	}
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) {
		t.Fatalf("%v: %v", p.cmd.Args, p.err)
	}
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return -1, ws.Signal()
	}
	return p.cmd.ProcessState.ExitCode(), 0
}

// TestCtrlCExitsZero: a gateway stopped with Ctrl-C (SIGINT to the foreground process
// group) after it was ready shuts down gracefully and exits 0, run directly and with
// `make run` (issue #15 item 16: make said "make: *** [Makefile:11: run] Error 1", as
// `go run` exits 1 whenever it is interrupted, whatever its child did). GNU make itself
// always ends by re-raising the SIGINT it got (a shell prints nothing for that); what
// must not happen is a recipe that failed.
func TestCtrlCExitsZero(t *testing.T) {
	t.Parallel()
	env := func(dir string) []string {
		return []string{"GATEWAY_ADDR=127.0.0.1:0", "GATEWAY_DATA_DIR=" + dir, "GATEWAY_LOG_FORMAT=json", "GATEWAY_CONFIG="}
	}
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		bin := buildCLI(t)
		p := startListening(t, exec.Command(bin, "serve"), env(t.TempDir())...)
		p.waitReady(t)
		if code, sig := p.interrupt(t); code != 0 {
			t.Fatalf("exit status %d (signal %v) after SIGINT, want 0\n%s", code, sig, p.log())
		}
	})
	t.Run("make run", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("make"); err != nil {
			t.Skip("no make")
		}
		bin := filepath.Join(t.TempDir(), "gateway")
		p := startListening(t, exec.Command("make", "--no-print-directory", "-C", "../..", "run", "BIN="+bin), env(t.TempDir())...)
		p.waitReady(t)
		code, sig := p.interrupt(t)
		// "make: *** [Makefile:N: run] Error 1" is the recipe failing (the gateway's exit
		// status); make's own "make: *** wait: No child processes" is a race inside make
		// between its SIGINT handler and its main loop both reaping the gateway, seen
		// once under load, and says nothing of the gateway.
		if !(code == 0 || sig == syscall.SIGINT) || strings.Contains(p.log(), "make: *** [") || !strings.Contains(p.log(), `"gateway stopped"`) {
			t.Fatalf("make run after Ctrl-C: exit status %d (signal %v), want 0 or SIGINT, the gateway stopped, no make error\n%s", code, sig, p.log())
		}
	})
}

// TestServeInterruptedStartExitsZero: SIGINT while the gateway is still starting is a
// clean stop too (run returns nil: exit status 0), not "context canceled" with status 1.
func TestServeInterruptedStartExitsZero(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, noEnv, &stdout, &stderr)
	if code := exitCode(err); code != 0 {
		t.Fatalf("run() with ctx canceled during start-up = %v (exit status %d), want nil (0)\n%s", err, code, stderr.String())
	}
}

// TestServeBindFailureLeavesNothing: a start that cannot listen creates no data dir and
// no ledger (issue #15 item 16: a fresh ledger.db was left behind).
func TestServeBindFailureLeavesNothing(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "new-data")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"serve", "--addr", busyAddr(t), "--data-dir", dataDir}, noEnv, &stdout, &stderr)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("run() = %v, want an error wrapping EADDRINUSE", err)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(dataDir)
		t.Fatalf("data dir %s after the failed bind: stat error %v, entries %v; want no data dir", dataDir, err, entries)
	}
}

func noEnv(string) (string, bool) { return "", false }
