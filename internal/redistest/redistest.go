package redistest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// EnvAddr names the environment variable that points the tests at an existing server
// (host:port) instead of starting one.
const EnvAddr = "GATEWAY_TEST_REDIS_ADDR"

const (
	readyTimeout = 10 * time.Second // a redis-server starts in milliseconds
	termTimeout  = 5 * time.Second  // SIGTERM → SIGKILL
	startTries   = 3                // a free port can be taken between probe and bind
)

// Server is a redis-server for one test. Its methods must be called from the test's
// goroutine (they may call tb.Fatal or tb.Skip).
type Server struct {
	tb       testing.TB
	addr     string
	port     string
	dir      string
	bin      string
	external bool // GATEWAY_TEST_REDIS_ADDR's server: not ours to stop
	opts     Options

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
}

// Start starts a redis-server for tb (or uses GATEWAY_TEST_REDIS_ADDR's) and returns its
// "127.0.0.1:PORT" address. See [StartServer].
func Start(tb testing.TB) string {
	tb.Helper()
	return StartServer(tb).Addr()
}

// StartServer starts `redis-server --bind 127.0.0.1 --port <free> --save "" --appendonly
// no --dir <tb.TempDir()>`, waits until it answers PING, and stops it in tb.Cleanup
// (SIGTERM, then SIGKILL after 5s). If GATEWAY_TEST_REDIS_ADDR is set it checks that
// server answers PING and returns it instead. Without redis-server on PATH it skips tb,
// saying how to install it (fails it, when GATEWAY_TEST_REQUIRE names redis or is "all":
// testutil.Unavailable); it calls tb.Fatal when the server does not come up.
func StartServer(tb testing.TB) *Server {
	tb.Helper()
	return startServer(tb, Options{})
}

func startServer(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if addr := os.Getenv(EnvAddr); addr != "" {
		if opts.set() {
			tb.Skipf("redistest: a server with options (password, extra arguments) must be started by the test; %s is set", EnvAddr)
		}
		if err := waitReady(addr, "", readyTimeout, nil); err != nil {
			tb.Fatalf("redistest: %s=%s: %v", EnvAddr, addr, err)
		}
		return &Server{tb: tb, addr: addr, external: true}
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testutil.Unavailable(tb, testutil.DepRedis, "redis-server not found: install it (Debian: apt-get install redis-server; make test does it when run as root) or set "+EnvAddr)
		return nil
	}
	s := &Server{tb: tb, dir: tb.TempDir(), bin: bin, opts: opts}
	for range startTries {
		s.port, err = freePort()
		if err != nil {
			tb.Fatalf("redistest: %v", err)
		}
		s.addr = net.JoinHostPort("127.0.0.1", s.port)
		if err = s.start(); err == nil {
			tb.Cleanup(s.shutdown)
			return s
		}
	}
	tb.Fatalf("redistest: %v", err)
	return nil
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Stop kills the server (SIGKILL: a crash, and there is no persistence to lose) and
// waits for it to exit; its port stays free for [Server.Restart]. Stopping a stopped
// server does nothing.
func (s *Server) Stop() {
	s.tb.Helper()
	s.mustOwn("Stop")
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

// Restart starts the server again on the same port and directory (stopping it first if
// it runs) and waits until it answers PING; the data set starts empty. It calls tb.Fatal
// if the server does not come up.
func (s *Server) Restart() {
	s.tb.Helper()
	s.mustOwn("Restart")
	s.Stop()
	if err := s.start(); err != nil {
		s.tb.Fatalf("redistest: restart: %v", err)
	}
}

// Pause freezes the server with SIGSTOP: connections still open (the kernel accepts
// them) but nothing is answered, like a hung server or a partition. Undo with
// [Server.Resume]; Cleanup resumes it anyway.
func (s *Server) Pause() {
	s.tb.Helper()
	s.mustOwn("Pause")
	s.signal(syscall.SIGSTOP)
}

// Resume continues a server frozen by [Server.Pause].
func (s *Server) Resume() {
	s.tb.Helper()
	s.mustOwn("Resume")
	s.signal(syscall.SIGCONT)
}

// Prefix returns a key prefix unique to this call ("gwtest:<test name>:<random>:"), for
// tests that may share a server through GATEWAY_TEST_REDIS_ADDR.
func Prefix(tb testing.TB) string {
	tb.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	name := strings.Map(func(r rune) rune {
		if r == ' ' || r == ':' || r < 0x20 {
			return '_'
		}
		return r
	}, tb.Name())
	return "gwtest:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}

func (s *Server) mustOwn(op string) {
	s.tb.Helper()
	if s.external {
		s.tb.Skipf("redistest: %s needs a redis-server the test started; %s is set", op, EnvAddr)
	}
}

func (s *Server) signal(sig syscall.Signal) {
	s.tb.Helper()
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		s.tb.Fatalf("redistest: %v: the server is stopped", sig)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		s.tb.Fatalf("redistest: %v: %v", sig, err)
	}
}

// start runs redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	logFile := filepath.Join(s.dir, "redis.log")
	args := append([]string{"--bind", "127.0.0.1", "--port", s.port,
		"--save", "", "--appendonly", "no",
		"--dir", s.dir, "--logfile", logFile}, s.opts.args()...)
	cmd := exec.Command(s.bin, args...)
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() { // reaps the process; exits when it does
		_ = cmd.Wait()
		close(p.done)
	}()
	if err := waitReady(s.addr, s.opts.Password, readyTimeout, p.done); err != nil {
		p.kill()
		return fmt.Errorf("redis-server on %s: %w%s", s.addr, err, logTail(logFile))
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// shutdown stops the server at the end of the test: SIGCONT (in case it is paused),
// SIGTERM, then SIGKILL if it has not exited within 5s.
func (s *Server) shutdown() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(termTimeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		s.tb.Logf("redistest: redis-server on %s ignored SIGTERM for %v; killing it", s.addr, termTimeout)
		p.kill()
	}
}

// kill sends SIGKILL and waits for the process to be reaped.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// waitReady polls addr with PING (after AUTH password, when one is set) until it answers
// +PONG, the timeout passes, or exited is closed (the process died).
func waitReady(addr, password string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ping(addr, password, 500*time.Millisecond)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to PING within %v: %w", timeout, err)
		}
		select {
		case <-exited:
			return errors.New("redis-server exited")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ping sends one PING in RESP (after AUTH password, when one is set) and expects +PONG.
func ping(addr, password string, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	if password != "" {
		if err := command(conn, r, "+OK", "AUTH", password); err != nil {
			return err
		}
	}
	return command(conn, r, "+PONG", "PING")
}

// command sends one command in RESP and expects the reply line want.
func command(conn net.Conn, r *bufio.Reader, want string, args ...string) error {
	if _, err := conn.Write(respCommand(args...)); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimRight(line, "\r\n"); line != want {
		return fmt.Errorf("%s answered %q", args[0], line)
	}
	return nil
}

// logTail returns the end of the server's log, for a failure message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	const limit = 2000
	if len(b) > limit {
		b = b[len(b)-limit:]
	}
	return "\nredis.log:\n" + string(b)
}
