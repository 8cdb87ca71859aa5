// Package pgtest gives tests a real PostgreSQL: a throwaway cluster that the test binary
// starts itself (initdb and postgres from /usr/lib/postgresql/*/bin, on a free port, in a
// temporary directory), or the server GATEWAY_TEST_POSTGRES_URL names. The first
// [Database] call of a test binary starts its one cluster; [Main] (or [Stop]) in TestMain
// stops it. Each test gets a fresh database.
//
// Without PostgreSQL (no initdb and postgres, and no GATEWAY_TEST_POSTGRES_URL) a test
// that asks for a database is skipped, saying how to install it, unless
// GATEWAY_TEST_REQUIRE names postgres (or is "all"): then it fails with that reason
// ([testutil.Unavailable]).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// EnvURL names a server to use instead of starting one: a URL whose user may create
// databases. Each test gets its own database on it.
const EnvURL = "GATEWAY_TEST_POSTGRES_URL"

var (
	once     sync.Once
	adminURL string // the maintenance database's URL of the cluster in use
	startErr error
	running  *cluster // the cluster this binary started; nil with EnvURL
	seq      atomic.Uint64
	mu       sync.Mutex
)

// Main runs the tests (run, or m.Run when run is nil) and then stops the cluster the
// first [Database] call started, if any: os.Exit(pgtest.Main(m, nil)) in TestMain.
func Main(m *testing.M, run func() int) int {
	if run == nil {
		run = m.Run
	}
	code := run()
	if err := Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: stop:", err)
	}
	return code
}

// Stop stops the cluster this binary started (a no-op if none); call it once the tests
// are done, from TestMain (Main does).
func Stop() error {
	if running == nil {
		return nil
	}
	c := running
	running = nil
	return c.stop()
}

// binGlob is where Debian's packages put PostgreSQL's binaries (one directory per
// version); initdb is also looked for on PATH.
var binGlob = "/usr/lib/postgresql/*/bin"

// errNotInstalled: neither initdb nor postgres can be found.
var errNotInstalled = errors.New("PostgreSQL's initdb and postgres are not installed: apt-get install postgresql (make test does it through scripts/ensure-postgres.sh when run as root), or set " + EnvURL + "=postgres://user@host/db")

// setup starts the cluster on first use, or takes EnvURL.
func setup() {
	if u := os.Getenv(EnvURL); u != "" {
		adminURL = u
		return
	}
	running, startErr = start()
	if startErr == nil {
		adminURL = running.url
	}
}

// Database creates a new empty database for the test and returns its URL; the first call
// starts the binary's cluster (stopped by [Main] or [Stop]). It fails the test when no
// PostgreSQL could not be started; without PostgreSQL installed it skips the test,
// saying how to install it (fails it, with GATEWAY_TEST_REQUIRE=postgres or all).
func Database(tb testing.TB) string {
	tb.Helper()
	once.Do(setup)
	switch {
	case errors.Is(startErr, errNotInstalled):
		testutil.Unavailable(tb, testutil.DepPostgres, "pgtest: "+startErr.Error())
		return ""
	case startErr != nil:
		tb.Fatalf("pgtest: %v", startErr)
	}
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mu.Lock() // CREATE DATABASE copies template1: one at a time
	defer mu.Unlock()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		tb.Fatalf("pgtest: connect %s: %v", redacted(adminURL), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func redacted(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

type cluster struct {
	dir string
	cmd *exec.Cmd
	url string
}

// binDir finds the newest /usr/lib/postgresql/<version>/bin holding initdb and postgres.
func binDir() (string, error) {
	dirs, _ := filepath.Glob(binGlob)
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errNotInstalled
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// credential runs the servers as the postgres system user when we are root (postgres
// refuses to run as root) and hands it dir.
func credential(dir string) (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() != 0 {
		return attr, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the postgres system user (apt-get install postgresql creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return attr, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func start() (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	if err := c.boot(bin); err != nil {
		_ = c.stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) boot(bin string) error {
	attr, err := credential(c.dir)
	if err != nil {
		return err
	}
	data := filepath.Join(c.dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = attr
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	c.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1",
		"-k", c.dir, "-F", "-c", "max_connections=300", "-c", "shared_buffers=32MB")
	c.cmd.SysProcAttr = attr
	log, err := os.Create(filepath.Join(c.dir, "postgres.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	c.cmd.Stdout, c.cmd.Stderr = log, log
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return c.ready()
}

// ready polls until the server accepts a connection (at most 30 s).
func (c *cluster) ready() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, c.url)
		cancel()
		if err == nil {
			return conn.Close(context.Background())
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
			return fmt.Errorf("postgres did not start: %w\n%s", err, logs)
		}
		time.Sleep(50 * time.Millisecond) // polling for readiness, not ordering
	}
}

// stop shuts the server down (fast shutdown) and removes its directory.
func (c *cluster) stop() error {
	var err error
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- c.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = c.cmd.Process.Kill()
			err = errors.Join(errors.New("postgres did not stop in 20s; killed"), <-done)
		}
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}
