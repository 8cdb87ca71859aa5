package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/postgres"
)

func openURL(t *testing.T, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func text(s string) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
		Parts: []ledger.Part{{Kind: ledger.PartText, Text: s}}}
}

// TestInstancesShareConversations: three Stores opened together on one database (three
// gateway instances starting at once: the migrations run once, under the lock) append
// concurrently to the same conversations; every append is acknowledged, the seqs are
// gap-free and each Store reads what the others wrote.
func TestInstancesShareConversations(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	stores := make([]*postgres.Store, 3)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() { stores[i] = openURL(t, url) })
	}
	wg.Wait()
	ctx := context.Background()
	const each = 30
	errs := make(chan error, len(stores)*each)
	for i, s := range stores {
		wg.Go(func() {
			for j := range each {
				_, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: fmt.Sprintf("c%d", j%2), Entries: []ledger.Entry{text(fmt.Sprintf("%d/%d", i, j))}})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Append error = %v", err)
	}
	for _, s := range stores {
		convs, err := s.List(ctx, ledger.ListOptions{})
		if err != nil || len(convs) != 2 || convs[0].LastSeq+convs[1].LastSeq != uint64(len(stores)*each) {
			t.Fatalf("List() = %+v, %v; want 2 conversations holding %d entries", convs, err, len(stores)*each)
		}
		if n, err := s.VerifyAll(ctx); n != 2 || err != nil {
			t.Errorf("VerifyAll() = %d, %v", n, err)
		}
	}
}

// TestDatabaseRefusesDuplicateSeq: the primary key refuses a second row at a stored seq,
// whoever writes it.
func TestDatabaseRefusesDuplicateSeq(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	s := openURL(t, url)
	res, err := s.Append(context.Background(), ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{text("x")}})
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, url)
	_, err = conn.Exec(context.Background(), `INSERT INTO entries (conv_key, seq, body) VALUES ($1, $2, '{}')`,
		contextid.Key("o", "c"), int64(res.Entries[0].Seq))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("a second entry at seq 1: err = %v, want a unique violation", err)
	}
}

// TestVerifyFindsTampering: Verify recomputes the hashes from what the database holds.
func TestVerifyFindsTampering(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	s := openURL(t, url)
	ctx := context.Background()
	for _, m := range []string{"one", "two", "three"} {
		if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{text(m)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Verify(ctx, "o", "c"); err != nil {
		t.Fatalf("Verify() before tampering = %v", err)
	}
	conn := connect(t, url)
	if _, err := conn.Exec(ctx, `UPDATE entries SET body = convert_to(replace(convert_from(body, 'UTF8'), '"two"', '"TWO"'), 'UTF8') WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	var ce *ledger.ChainError
	if err := s.Verify(ctx, "o", "c"); !errors.As(err, &ce) || ce.Seq != 2 {
		t.Errorf("Verify() after tampering = %v, want a ChainError at seq 2", err)
	}
	if _, err := s.VerifyAll(ctx); !errors.Is(err, ledger.ErrChainBroken) {
		t.Errorf("VerifyAll() after tampering = %v, want ErrChainBroken", err)
	}
}

// TestGroupCommit: concurrent appends share transactions.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	s := openURL(t, pgtest.Database(t))
	ctx := context.Background()
	var wg sync.WaitGroup
	start := make(chan struct{}) // released together: appenders started one by one on a loaded machine could each find an idle committer
	for i := range 64 {
		wg.Go(func() {
			<-start
			if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: fmt.Sprintf("g%d", i%8), Entries: []ledger.Entry{text("x")}}); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	st := s.Stats()
	if st.Appends != 64 || st.Commits >= 64 {
		t.Errorf("Stats() = %+v: want 64 appends in fewer than 64 commits", st)
	}
	t.Logf("64 concurrent appends in %d commits", st.Commits)
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestListenAcrossInstances: an append through one Store is announced to a listener of
// another, after its commit, with its seqs.
func TestListenAcrossInstances(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a, b := openURL(t, url), openURL(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan postgres.Appended, 16)
	listening := make(chan error, 1)
	go func() { listening <- b.Listen(ctx, func(x postgres.Appended) { got <- x }, nil) }()
	defer func() { cancel(); <-listening }()
	// LISTEN takes effect asynchronously: append until the first announcement arrives.
	var first postgres.Appended
	for first.LastSeq == 0 {
		if _, err := a.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "live", Entries: []ledger.Entry{text("x"), text("y")}}); err != nil {
			t.Fatal(err)
		}
		select {
		case first = <-got:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if first.Owner != "o" || first.ContextID != "live" || first.LastSeq != first.FirstSeq+1 {
		t.Fatalf("announcement = %+v, want o/live, two seqs", first)
	}
	c, err := b.Conversation(ctx, "o", "live")
	if err != nil || c.LastSeq < first.LastSeq {
		t.Fatalf("announced seq %d is not readable through the listener's store: %+v, %v", first.LastSeq, c, err)
	}
}

// TestWatchAcrossInstances: a Watch through one Store reaches another's listener (and
// only its watched callback), with the conversation it names.
func TestWatchAcrossInstances(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a, b := openURL(t, url), openURL(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan postgres.Watched, 16)
	appended := make(chan postgres.Appended, 16)
	listening := make(chan error, 1)
	go func() {
		listening <- b.Listen(ctx, func(x postgres.Appended) { appended <- x }, func(w postgres.Watched) { got <- w })
	}()
	defer func() { cancel(); <-listening }()
	// LISTEN takes effect asynchronously: signal until the first one arrives.
	var w postgres.Watched
	for w.ContextID == "" {
		if err := a.Watch(ctx, "o", "watched-ctx"); err != nil {
			t.Fatal(err)
		}
		select {
		case w = <-got:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if w != (postgres.Watched{Owner: "o", ContextID: "watched-ctx"}) {
		t.Fatalf("watch signal = %+v, want o/watched-ctx", w)
	}
	for len(appended) > 0 { // the one zero Appended is the listening signal (catch up)
		if x := <-appended; x != (postgres.Appended{}) {
			t.Fatalf("a watch signal reached the append callback as %+v", x)
		}
	}
}

// TestVerifyAllProgress: Options.OnVerify hears how far VerifyAll has got, at most once a
// second of the store's clock (400 ms pass per reading here), and once at the end, as the
// bbolt ledger's does.
func TestVerifyAllProgress(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	s := openURL(t, url)
	ctx := context.Background()
	for i := range 10 {
		if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: fmt.Sprintf("c%d", i), Entries: []ledger.Entry{text("hello")}}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		at = at.Add(400 * time.Millisecond)
		return at
	}
	var got [][2]int
	v, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 4, Now: clock, OnVerify: func(done, total int) {
		got = append(got, [2]int{done, total})
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if n, err := v.VerifyAll(ctx); err != nil || n != 10 {
		t.Fatalf("VerifyAll() = %d, %v; want 10, nil", n, err)
	}
	if want := [][2]int{{2, 10}, {5, 10}, {8, 10}, {10, 10}}; !slices.Equal(want, got) {
		t.Errorf("OnVerify calls = %v, want %v", got, want)
	}
}

// TestListenSaysWhenListening: Listen's first call is the zero Appended that says "you are
// listening now; catch up from the store", and every append committed after it is
// announced. An instance that starts while another appends (before its LISTEN is in
// effect) learns of those appends from the catch-up, not never.
func TestListenSaysWhenListening(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a, b := openURL(t, url), openURL(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan postgres.Appended, 16)
	listening := make(chan error, 1)
	go func() { listening <- b.Listen(ctx, func(x postgres.Appended) { got <- x }, nil) }()
	defer func() { cancel(); <-listening }()
	deadline := time.After(time.Minute) // a failure bound only: both waits end on an event
	select {
	case first := <-got:
		if first != (postgres.Appended{}) {
			t.Fatalf("first call = %+v, want the zero Appended (listening: catch up)", first)
		}
	case <-deadline:
		t.Fatal("Listen never said it was listening")
	}
	if _, err := a.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "after", Entries: []ledger.Entry{text("x")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case x := <-got:
		if x.Owner != "o" || x.ContextID != "after" || x.LastSeq == 0 {
			t.Fatalf("announcement = %+v, want o/after", x)
		}
	case <-deadline:
		t.Fatal("an append committed after the listening signal was not announced")
	}
}
