package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// TestCollisionCorpus is the regression test for Hermes #83701: ids that a sanitizer would
// merge, ids that look like paths or keys, and one id under two owners each stay separate.
func TestCollisionCorpus(t *testing.T) {
	t.Parallel()
	type conv struct{ owner, id string }
	corpus := []conv{
		{"local", "tenant/a"},
		{"local", "tenanta"},
		{"local", "a/b"},
		{"local", "ab"},
		{"local", "über"},
		{"local", "uber"},
		{"local", strings.Repeat("z", 256)},
		{"local", "../../etc/passwd"},
		{"local", contextid.Key("local", "tenant/a")}, // another conversation's storage key
		{"local", "v1.tasks"},
		{"peer-a", "shared"},
		{"peer-b", "shared"},
		{"ab", "c"},
		{"a", "bc"},
	}
	modes(t, func(t *testing.T, opts Options) {
		opts.Now = fakeClock()
		s := mustOpen(t, opts)
		ctx := t.Context()
		marker := func(c conv) string { return fmt.Sprintf("only %q of %q", c.id, c.owner) }
		for _, c := range corpus {
			mustAppend(t, s, c.owner, c.id, userMsg(marker(c)), agentMsg("reply to "+marker(c)))
		}
		for _, c := range corpus {
			got, err := s.Range(ctx, c.owner, c.id, 0, 0)
			if err != nil {
				t.Fatalf("Range(%q, %q) error = %v", c.owner, c.id, err)
			}
			if diff := cmp.Diff([]string{marker(c), "reply to " + marker(c)}, texts(got)); diff != "" {
				t.Errorf("Range(%q, %q) (-want +got):\n%s", c.owner, c.id, diff)
			}
			last, err := s.Last(ctx, c.owner, c.id, 1, func(e *Entry) bool { return e.Kind == KindUserMessage })
			if err != nil || len(last) != 1 || last[0].Parts[0].Text != marker(c) {
				t.Errorf("Last(%q, %q) = %v, %v, want its own user message", c.owner, c.id, texts(last), err)
			}
			conv, err := s.Conversation(ctx, c.owner, c.id)
			if err != nil || conv.ContextID != c.id || conv.Owner != c.owner || conv.Entries != 2 {
				t.Errorf("Conversation(%q, %q) = %+v, %v", c.owner, c.id, conv, err)
			}
		}
		list, err := s.List(ctx, ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got, want []conv
		for _, c := range list {
			got = append(got, conv{c.Owner, c.ContextID})
		}
		want = append(want, corpus...)
		slices.Reverse(want) // newest activity first: the fake clock advances per append
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(conv{})); diff != "" {
			t.Errorf("List() (-want +got):\n%s", diff)
		}
		peerA, err := s.List(ctx, ListOptions{Owner: "peer-a"})
		if err != nil || len(peerA) != 1 || peerA[0].ContextID != "shared" {
			t.Errorf("List(owner peer-a) = %+v, %v, want only its shared", peerA, err)
		}

		// "" is refused and creates nothing.
		before := countTopLevel(t, s)
		if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "", Entries: []Entry{userMsg("x")}}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Append(contextId \"\") error = %v, want %v", err, ErrInvalid)
		}
		if _, err := s.Conversation(ctx, "local", ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("Conversation(contextId \"\") error = %v, want %v", err, ErrInvalid)
		}
		if after := countTopLevel(t, s); after != before {
			t.Errorf("top-level buckets %d after a refused append, want %d", after, before)
		}
		if n, err := s.VerifyAll(ctx); n != len(corpus) || err != nil {
			t.Errorf("VerifyAll() = %d, %v, want %d, nil", n, err, len(corpus))
		}
	})
}

func countTopLevel(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.db.View(func(tx *bolt.Tx) error {
		n += len(headKeys(tx)) // format 2: the conversations are heads, not buckets
		return tx.ForEach(func([]byte, *bolt.Bucket) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLegacyBuckets checks that data outside the current namespace is never listed, never
// loaded and never written, even when its name looks like a conversation's.
func TestLegacyBuckets(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/l.db"
	v0 := "v0/" + strings.TrimPrefix(contextid.Key("local", "tenant/a"), "v1/")
	upper := "v1/" + strings.ToUpper(strings.TrimPrefix(contextid.Key("local", "tenanta"), "v1/"))
	legacy := map[string]map[string]string{
		"conversations": {"tenant/a": `{"role":"user","text":"legacy left"}`, "tenanta": `{"role":"user","text":"legacy right"}`},
		v0:              {"meta": `{"contextId":"tenant/a","owner":"local","lastSeq":1}`, "1": `{"text":"old namespace"}`},
		"tenant/a":      {"0001": `{"text":"raw legacy bucket"}`},
		upper:           {"meta": `{"contextId":"tenanta","owner":"local","lastSeq":9}`},
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for name, kv := range legacy {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			for k, v := range kv {
				if err := b.Put([]byte(k), []byte(v)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before := dumpBuckets(t, db, legacy)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(path, testOpts, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, id := range []string{"tenant/a", "tenanta", "conversations"} {
		if _, err := s.Conversation(ctx, "local", id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Conversation(%q) before any append error = %v, want %v (legacy data is never loaded)", id, err, ErrNotFound)
		}
	}
	if list, err := s.List(ctx, ListOptions{}); err != nil || len(list) != 0 {
		t.Errorf("List() = %+v, %v, want nothing (legacy data is never listed)", list, err)
	}
	for _, id := range []string{"tenant/a", "tenanta", "conversations"} {
		mustAppend(t, s, "local", id, userMsg("new "+id))
	}
	for _, id := range []string{"tenant/a", "tenanta", "conversations"} {
		got, err := s.Range(ctx, "local", id, 0, 0)
		if diff := cmp.Diff([]string{"new " + id}, texts(got)); err != nil || diff != "" {
			t.Errorf("Range(%q) = %v (-want +got):\n%s", id, err, diff)
		}
	}
	list, err := s.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ContextID)
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]string{"conversations", "tenant/a", "tenanta"}, ids); diff != "" {
		t.Errorf("List() ids (-want +got):\n%s", diff)
	}
	if n, err := s.VerifyAll(ctx); n != 3 || err != nil {
		t.Errorf("VerifyAll() = %d, %v, want 3, nil", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if diff := cmp.Diff(before, dumpBuckets(t, db, legacy)); diff != "" {
		t.Errorf("legacy buckets changed (-before +after):\n%s", diff)
	}
}

// dumpBuckets returns the exact bytes of every key of the named top-level buckets.
func dumpBuckets(t *testing.T, db *bolt.DB, names map[string]map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := db.View(func(tx *bolt.Tx) error {
		for name := range names {
			b := tx.Bucket([]byte(name))
			if b == nil {
				return fmt.Errorf("bucket %q missing", name)
			}
			var buf bytes.Buffer
			if err := b.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&buf, "%q=%q\n", k, v)
				return nil
			}); err != nil {
				return err
			}
			out[name] = buf.String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
