package ledger

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// TestVerifyAll_FindsUnindexedConversation: a format-2 conversation whose owner is missing
// from the owners list (and which the by-contextId index does not list), or whose activity
// index key is missing, is intact but hidden from
// ConversationsByID or from the listing by last activity. VerifyAll names the
// conversation and the index, does not quarantine it (it is still served), and passes once the
// index is whole; heads still in "v1.heads.recent" need no activity key yet.
func TestVerifyAll_FindsUnindexedConversation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := mustOpenPath(t, path, Options{})
	for _, id := range []string{"a", "b", "c"} {
		owner := "o"
		if id == "a" {
			owner = "oa" // the only conversation of its owner
		}
		mustAppend(t, s, owner, id, userMsg("hello "+id))
	}
	// Heads in v1.heads.recent, with no activity key yet: not a fault.
	if n, err := s.VerifyAll(t.Context()); err != nil || n != 3 {
		t.Fatalf("VerifyAll before the checkpoint = %d, %v; want 3, nil", n, err)
	}
	if err := s.Close(); err != nil { // the checkpoint moves the heads and writes their keys
		t.Fatal(err)
	}
	s = mustOpenPath(t, path, Options{})
	if n, err := s.VerifyAll(t.Context()); err != nil || n != 3 {
		t.Fatalf("VerifyAll of the whole file = %d, %v; want 3, nil", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	keyA, keyB := contextid.Key("oa", "a"), contextid.Key("o", "b")
	editFile(t, path, func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketOwners).Delete([]byte("oa")); err != nil {
			return err
		}
		m, _, err := readHead(tx, keyB)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketActivity).Delete(activityKey(m.LastActivity, keyB))
	})

	s = mustOpenPath(t, path, Options{})
	n, err := s.VerifyAll(t.Context())
	if n != 3 || !errors.Is(err, ErrChainBroken) {
		t.Fatalf("VerifyAll = %d, %v; want 3 and a ChainError per missing index key", n, err)
	}
	msg := err.Error()
	for _, want := range []string{
		`conversation "a" (owner "oa", key ` + keyA + `): neither the owners list (v1.owners) names its owner nor the v1.byid index lists it`,
		`conversation "b" (owner "o", key ` + keyB + `): the v1.activity index does not list it`,
		"gateway ledger salvage rebuilds the index",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("VerifyAll's error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, `contextId "c"`) {
		t.Errorf("VerifyAll names conversation c, whose index keys are whole:\n%s", msg)
	}
	if q := s.Quarantined(); len(q) != 0 {
		t.Errorf("Quarantined = %v; want none: the conversations are intact", q)
	}
	for id, owner := range map[string]string{"a": "oa", "b": "o"} {
		if _, err := s.Append(t.Context(), AppendRequest{Owner: owner, ContextID: id, Entries: []Entry{userMsg("again")}}); err != nil {
			t.Errorf("Append to %s after VerifyAll: %v; want it served", id, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// What the error tells the operator to do: a salvage writes both indexes anew.
	dst := filepath.Join(t.TempDir(), "salvaged.db")
	if _, err := Salvage(t.Context(), path, dst, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, dst, Options{})
	defer s.Close()
	if n, err := s.VerifyAll(t.Context()); err != nil || n != 3 {
		t.Errorf("VerifyAll of the salvaged file = %d, %v; want 3, nil", n, err)
	}
}

// editFile runs fn in a write transaction of the closed ledger file at path, through bbolt
// alone (no Store, no write-ahead log), as damage or an older build would leave it.
func editFile(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistArrayType})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(db.Update(fn), db.Close()); err != nil {
		t.Fatal(err)
	}
}

// stepClock is a clock that moves step forward at each reading.
type stepClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// TestVerifyAllProgress: Options.OnVerify hears how far VerifyAll has got, at most once a
// second of the store's clock (here 400 ms pass per reading: every third conversation),
// and once when every conversation is verified.
func TestVerifyAllProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := mustOpenPath(t, path, Options{})
	for i := range 10 {
		mustAppend(t, s, "o", fmt.Sprintf("c%d", i), userMsg("hello"))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	clock := &stepClock{t: time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC), step: 400 * time.Millisecond}
	var got [][2]int
	s = mustOpenPath(t, path, Options{Now: clock.now, OnVerify: func(done, total int) {
		got = append(got, [2]int{done, total})
	}})
	defer s.Close()
	if n, err := s.VerifyAll(t.Context()); err != nil || n != 10 {
		t.Fatalf("VerifyAll = %d, %v; want 10, nil", n, err)
	}
	want := [][2]int{{2, 10}, {5, 10}, {8, 10}, {10, 10}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OnVerify calls (-want +got):\n%s", diff)
	}
}

// TestUpgradeAndSalvageLogProgress: the upgrade logs how far each of its three passes
// has got, and a salvage how far its copy has got, at Info about once a second (here
// the clock moves 400 ms per reading); the final count is each operation's own report.
func TestUpgradeAndSalvageLogProgress(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	writeFormat1(t, path, Options{}, func(s *Store) {
		for i := range 10 {
			mustAppend(t, s, "o", fmt.Sprintf("c%d", i), userMsg("hello"))
		}
	})
	start := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	var logs testutil.LogBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	clock := &stepClock{t: start, step: 400 * time.Millisecond}
	if rep, err := upgrade(t.Context(), path, logger, clock.now); err != nil || rep.Conversations != 10 {
		t.Fatalf("upgrade = %+v, %v; want 10 conversations", rep, err)
	}
	clock = &stepClock{t: start, step: 400 * time.Millisecond}
	if rep, err := salvage(t.Context(), path, filepath.Join(dir, "salvaged.db"), logger, clock.now); err != nil || rep.Copied != 10 {
		t.Fatalf("salvage = %+v, %v; want 10 copied", rep, err)
	}
	for _, what := range []string{"upgrade: verifying the format-1 file", "upgrade: copying into format 2",
		"upgrade: verifying the copy", "salvage: copying"} {
		re := regexp.MustCompile(`level=INFO msg="ledger: ` + what + `" done=(\d+) total=10`)
		m := re.FindAllStringSubmatch(logs.String(), -1)
		if len(m) < 2 {
			t.Errorf("%q: %d progress lines, want several:\n%s", what, len(m), logs.String())
			continue
		}
		for i := 1; i < len(m); i++ {
			if m[i][1] <= m[i-1][1] {
				t.Errorf("%q: done went %s then %s", what, m[i-1][1], m[i][1])
			}
		}
	}
}
