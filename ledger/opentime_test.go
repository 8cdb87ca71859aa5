package ledger

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/contextid"
)

// TestOpenTime measures Open on a ledger of LEDGER_OPEN_CONVS conversations (4 turns
// each, ~0.5 KiB a message): bbolt's own open (all the old Open did), the page check,
// Open, Open with the full check (VerifyOnOpen), and the first use of every conversation
// (checkOnce). It is a measurement, not a check: it runs only when the
// variable is set, e.g. LEDGER_OPEN_CONVS=10000 go test -run TestOpenTime -v ./ledger/.
func TestOpenTime(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LEDGER_OPEN_CONVS"))
	if n == 0 {
		t.Skip("set LEDGER_OPEN_CONVS to measure")
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fillConvs(t, s, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	t.Logf("%d conversations, file %d MiB", n, info.Size()>>20)
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"bbolt open alone (no page check)", func() error {
			db, _, err := openWritable(path, Options{NoSync: true}, nil)
			if err == nil {
				err = db.Close()
			}
			return err
		}},
		{"page check alone", func() error { _, err := checkFile(path); return err }},
		{"Open (default)", func() error { return openClose(path, Options{NoSync: true}) }},
		{"Open VerifyOnOpen", func() error { return openClose(path, Options{NoSync: true, VerifyOnOpen: true}) }},
	} {
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			if err := c.run(); err != nil {
				t.Fatal(err)
			}
			best = min(best, time.Since(start))
		}
		t.Logf("%-36s %v", c.name, best.Round(time.Millisecond))
	}
	s, err = Open(path, Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	for i := range n {
		if err := s.firstUse(context.Background(), contextid.Key("p", fmt.Sprintf("conv-%d", i)), "", ""); err != nil {
			t.Fatal(err)
		}
	}
	d := time.Since(start)
	t.Logf("first use of each conversation (checkOnce): %v in all, %v each", d.Round(time.Millisecond), (d / time.Duration(n)).Round(time.Microsecond))
}

func openClose(path string, opts Options) error {
	s, err := Open(path, opts, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return s.Close()
}

// fillConvs appends 4 turns to each of n conversations, from 64 goroutines.
func fillConvs(t *testing.T, s *Store, n int) {
	text := strings.Repeat("x", 500)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 64 {
		wg.Go(func() {
			for i := w; i < n; i += 64 {
				cid := fmt.Sprintf("conv-%d", i)
				for turn := range 4 {
					task := fmt.Sprintf("%s-t%d", cid, turn)
					_, err := s.Append(context.Background(), AppendRequest{Owner: "p", ContextID: cid, BeginTurn: true, Entries: []Entry{
						{TaskID: task, Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel, Parts: []Part{{Kind: PartText, Text: text}}},
						{TaskID: task, Kind: KindAgentReply, Trust: TrustAgent, Visibility: VisibilityModel, Parts: []Part{{Kind: PartText, Text: text}}},
					}})
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
