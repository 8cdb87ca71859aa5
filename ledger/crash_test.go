package ledger

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// crashDirEnv tells a re-executed test binary to run as the crash child in that directory.
const crashDirEnv = "LEDGER_CRASH_CHILD_DIR"

const (
	crashContexts = 4
	crashWriters  = 8 // two writers per conversation
)

// TestCrashRecovery (perf-anchors R1): a child process appends numbered messages from
// several goroutines (group commit, real fsync) and prints each one only after Append
// returned; the parent SIGKILLs it at a random point, reopens the ledger and checks that
// every printed entry is there, the seqs are gap-free and every chain verifies. The
// iterations share one file, so each child also recovers from the previous kill.
func TestCrashRecovery(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("crash test re-executes the test binary")
	}
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	type ack struct {
		ctx  string
		seq  uint64
		text string
	}
	var acks []ack
	const iterations = 8
	for it := range iterations {
		delay := time.Duration(20+rand.IntN(181)) * time.Millisecond
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecovery$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		ready := false
		var timer *time.Timer
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if !ready {
				if line == "ready" {
					ready = true
					timer = time.AfterFunc(delay, func() { _ = cmd.Process.Kill() }) // SIGKILL
				}
				continue
			}
			f := strings.SplitN(line, " ", 3)
			if len(f) != 3 {
				continue // a line cut by the kill was never fully acknowledged
			}
			seq, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				continue
			}
			acks = append(acks, ack{f[0], seq, f[2]})
			n++
		}
		if timer != nil {
			timer.Stop()
		}
		_ = cmd.Process.Kill() // in case the child ended the output some other way
		werr := cmd.Wait()
		if !ready {
			t.Fatalf("iteration %d: child never became ready: %v\n%s", it, werr, stderr.String())
		}
		t.Logf("iteration %d: killed after %v, %d acknowledged appends", it, delay, n)

		s, err := Open(path, testOpts, nil)
		if err != nil {
			t.Fatalf("iteration %d: Open() after kill error = %v", it, err)
		}
		checkCrashState(t, s, func(yield func(string, uint64, string) bool) {
			for _, a := range acks {
				if !yield(a.ctx, a.seq, a.text) {
					return
				}
			}
		})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			return
		}
	}
	if len(acks) == 0 {
		t.Fatal("no append was acknowledged in any iteration")
	}
}

func checkCrashState(t *testing.T, s *Store, acks func(func(string, uint64, string) bool)) {
	t.Helper()
	ctx := t.Context()
	if err := s.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stored := map[string][]Entry{}
	for i := range crashContexts {
		id := fmt.Sprintf("crash-%d", i)
		entries, err := s.Range(ctx, "local", id, 0, 0)
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatalf("Range(%s) error = %v", id, err)
		}
		for j, e := range entries {
			if e.Seq != uint64(j+1) {
				t.Fatalf("%s: entry %d has seq %d, want %d (gap)", id, j, e.Seq, j+1)
			}
		}
		stored[id] = entries
		if err == nil {
			if err := s.Verify(ctx, "local", id); err != nil {
				t.Errorf("Verify(%s) error = %v", id, err)
			}
		}
	}
	acks(func(id string, seq uint64, text string) bool {
		entries := stored[id]
		if seq == 0 || seq > uint64(len(entries)) {
			t.Errorf("acknowledged %s seq %d (%q) is missing: only %d entries", id, seq, text, len(entries))
			return true
		}
		if got := entries[seq-1].Parts[0].Text; got != text {
			t.Errorf("acknowledged %s seq %d = %q, want %q", id, seq, got, text)
		}
		return true
	})
}

// crashChild appends until it is killed, printing "<contextId> <seq> <text>" for each
// acknowledged append. It exits on its own after 10 s in case the parent is gone.
func crashChild(dir string) {
	time.AfterFunc(10*time.Second, func() { os.Exit(3) })
	s, err := Open(filepath.Join(dir, "ledger.db"), Options{}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	emit := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = os.Stdout.WriteString(line) // one write per line: never interleaved
	}
	emit("ready\n")
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Go(func() {
			id := fmt.Sprintf("crash-%d", w%crashContexts)
			for i := 0; ; i++ {
				text := fmt.Sprintf("%s-w%d-%d", run, w, i)
				res, err := s.Append(context.Background(), AppendRequest{Owner: "local", ContextID: id, Entries: []Entry{userMsg(text)}})
				if err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					os.Exit(2)
				}
				emit(fmt.Sprintf("%s %d %s\n", id, res.Entries[0].Seq, text))
			}
		})
	}
	wg.Wait()
}
