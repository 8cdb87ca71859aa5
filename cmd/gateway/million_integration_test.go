//go:build integration

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
)

// TestMillionStartAndList measures two targets of issue #16 on a ledger of
// GATEWAY_BENCH_CONVERSATIONS one-turn conversations (1000000 for the figures),
// made directly through the Store, millionRunning of them left with a running task (the
// gateway stopped during their turn): the time from starting the real binary
// (`gateway serve --data-dir`) to the first 200 of /healthz and of /readyz (start-up
// recovers the running tasks), and page 2 and page 1000 of 20 conversations by last
// activity through the conversations service. It prints the figures; without the
// variable it is skipped (make test does not run it).
//
//	GATEWAY_BENCH_CONVERSATIONS=1000000 GATEWAY_BENCH_DIR=/var/tmp/gw go test -tags=integration \
//	    -run TestMillionStartAndList -timeout 60m -v ./cmd/gateway
//
// GATEWAY_BENCH_DIR keeps the made ledger and reuses it; GATEWAY_BENCH_BASELINE names
// another build of the gateway to start on a copy of the same ledger first (the figures
// before a change).
func TestMillionStartAndList(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GATEWAY_BENCH_CONVERSATIONS"))
	if n <= 0 {
		t.Skip("set GATEWAY_BENCH_CONVERSATIONS (1000000 for the issue's target)")
	}
	dir := os.Getenv("GATEWAY_BENCH_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	made := filepath.Join(dir, fmt.Sprintf("million-%d.db", n))
	if _, err := os.Stat(made); err != nil {
		t0 := time.Now()
		makeMillion(t, made+".tmp", n)
		if err := os.Rename(made+".tmp", made); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("made %d conversations (%d running) in %v\n", n, millionRunning, time.Since(t0).Round(time.Millisecond))
	}
	bins := map[string]string{}
	if b := os.Getenv("GATEWAY_BENCH_BASELINE"); b != "" {
		bins["baseline"] = b
	}
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	bins["this build"] = bin
	for _, name := range []string{"baseline", "this build"} {
		if bins[name] == "" {
			continue
		}
		dataDir := t.TempDir()
		copyFile(t, made, filepath.Join(dataDir, "ledger.db"))
		health, ready := timeStart(t, bins[name], dataDir, name == "this build")
		fmt.Printf("%s: start to the first 200 of /healthz %v, of /readyz %v (%d conversations, %d running tasks)\n",
			name, health.Round(time.Millisecond), ready.Round(time.Millisecond), n, millionRunning)
		if name == "this build" {
			pages(t, dataDir, n)
		}
	}
}

// millionRunning is how many of the made conversations have a task left running.
const millionRunning = 100

// makeMillion writes n conversations of one turn as the gateway writes it (the message
// and a working status, then the reply and the completed status; a task id per turn,
// time-ordered), millionRunning of them stopped before the reply.
func makeMillion(t *testing.T, path string, n int) {
	s, err := ledger.Open(path, ledger.Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("lorem ipsum ", 40)
	every := max(n/millionRunning, 1)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				task := uuid.Must(uuid.NewV7()).String()
				es := []ledger.Entry{
					{TaskID: task, Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser, Actor: "local", Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}},
					{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, Actor: "gateway", State: "working"},
				}
				if i%every != 0 {
					es = append(es,
						ledger.Entry{TaskID: task, Kind: ledger.KindAgentReply, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityModel, Role: ledger.RoleAgent, Actor: "agent", Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}},
						ledger.Entry{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, Actor: "gateway", State: "completed"})
				}
				if _, err := s.Append(context.Background(), ledger.AppendRequest{Owner: "local", ContextID: fmt.Sprintf("ctx-%d", i), BeginTurn: true, Entries: es}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(out.Sync(), out.Close()); err != nil {
		t.Fatal(err)
	}
}

// timeStart starts bin on dataDir and returns the time from the start to the first 200
// of /healthz and of /readyz; it stops the gateway and, when check, checks that it left
// no task in the running-task index (a build before the index does not maintain it).
func timeStart(t *testing.T, bin, dataDir string, check bool) (health, ready time.Duration) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", dataDir, "--log-format", "json", "--rate-limit", "0")
	cmd.Stderr = io.Discard
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	client := &http.Client{Timeout: time.Second}
	ok := func(path string) bool {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	testutil.WaitFor(t, "/healthz answers 200", func() bool { return ok("/healthz") })
	health = time.Since(t0)
	testutil.WaitFor(t, "/readyz answers 200", func() bool { return ok("/readyz") })
	ready = time.Since(t0)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	if !check {
		return health, ready
	}
	s, err := ledger.Open(filepath.Join(dataDir, "ledger.db"), ledger.Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rts, err := s.RunningTasks(context.Background()); err != nil || len(rts) != 0 {
		t.Errorf("after the start %d tasks are still running (%v), want every one recovered", len(rts), err)
	}
	return health, ready
}

// pages times page 2 and page 1000 of 20 conversations by last activity through the
// conversations service (the median of 20 reads of each), and the ledger's full listing
// that later pages cost before the cursor reached the ledger.
func pages(t *testing.T, dataDir string, n int) {
	s, err := ledger.Open(filepath.Join(dataDir, "ledger.db"), ledger.Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	svc := conversations.New(s, conversations.Config{})
	ctx := context.Background()
	cursor := ""
	timed := map[int]time.Duration{}
	for page := 1; page <= 1000; page++ {
		opts := conversations.ListOptions{Limit: 20, Cursor: cursor}
		var d []time.Duration
		var p conversations.Page
		for range 20 {
			t0 := time.Now()
			if p, err = svc.List(ctx, opts); err != nil || len(p.Conversations) != 20 {
				t.Fatalf("page %d = %d conversations, %v", page, len(p.Conversations), err)
			}
			d = append(d, time.Since(t0))
			if page != 2 && page != 1000 {
				break
			}
		}
		slices.Sort(d)
		timed[page] = d[len(d)/2]
		cursor = p.Next
	}
	t0 := time.Now()
	all, err := s.List(ctx, ledger.ListOptions{})
	if err != nil || len(all) != n {
		t.Fatalf("List() = %d, %v", len(all), err)
	}
	fmt.Printf("pages of 20 by last activity through the service, %d conversations: page 2 %.3f ms, page 1000 %.3f ms (median of 20); the full listing later pages read before: %v\n",
		n, ms(timed[2]), ms(timed[1000]), time.Since(t0).Round(time.Millisecond))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
