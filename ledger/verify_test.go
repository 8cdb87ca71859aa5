package ledger

import (
	"errors"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/conversations"
)

func TestVerify_DetectsTampering(t *testing.T) {
	t.Parallel()
	rewrite := func(f func(t *testing.T, items *bolt.Bucket, meta *bolt.Bucket)) func(t *testing.T, tx *bolt.Tx) {
		return func(t *testing.T, tx *bolt.Tx) {
			conv := tx.Bucket([]byte(conversations.Key("local", "c")))
			f(t, conv.Bucket(subBucketItems), conv)
		}
	}
	replace := func(old, new string) func(t *testing.T, items, _ *bolt.Bucket) {
		return func(t *testing.T, items, _ *bolt.Bucket) {
			v := string(items.Get(encodeSeq(3)))
			nv := replaceOnce(t, v, old, new)
			if err := items.Put(encodeSeq(3), []byte(nv)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name    string
		tamper  func(t *testing.T, tx *bolt.Tx)
		wantSeq uint64
	}{
		{"edited text", rewrite(replace(`"text":"m-3"`, `"text":"m-X"`)), 3},
		{"edited trust", rewrite(replace(`"trust":"PEER_UNTRUSTED"`, `"trust":"OPERATOR_TRUSTED"`)), 3},
		{"removed entry", rewrite(func(t *testing.T, items, _ *bolt.Bucket) {
			if err := items.Delete(encodeSeq(3)); err != nil {
				t.Fatal(err)
			}
		}), 3},
		{"swapped entries", rewrite(func(t *testing.T, items, _ *bolt.Bucket) {
			a, b := append([]byte(nil), items.Get(encodeSeq(2))...), append([]byte(nil), items.Get(encodeSeq(3))...)
			if items.Put(encodeSeq(2), b) != nil || items.Put(encodeSeq(3), a) != nil {
				t.Fatal("put failed")
			}
		}), 2},
		{"garbage value", rewrite(func(t *testing.T, items, _ *bolt.Bucket) {
			if err := items.Put(encodeSeq(3), []byte("{not json")); err != nil {
				t.Fatal(err)
			}
		}), 3},
		{"truncated tail", rewrite(func(t *testing.T, items, _ *bolt.Bucket) {
			if err := items.Delete(encodeSeq(5)); err != nil {
				t.Fatal(err)
			}
		}), 5},
		{"task index entry removed", rewrite(func(t *testing.T, _, conv *bolt.Bucket) {
			if err := conv.Bucket(subBucketTasks).Delete(taskKey("t", 4)); err != nil {
				t.Fatal(err)
			}
		}), 4},
		{"task moved to another conversation", func(t *testing.T, tx *bolt.Tx) {
			if err := tx.Bucket(bucketTasks).Put([]byte("t"), []byte(conversations.Key("local", "other"))); err != nil {
				t.Fatal(err)
			}
		}, 4},
		{"metadata counters", rewrite(func(t *testing.T, _, conv *bolt.Bucket) {
			v := replaceOnce(t, string(conv.Get(keyMeta)), `"turns":5`, `"turns":4`)
			if err := conv.Put(keyMeta, []byte(v)); err != nil {
				t.Fatal(err)
			}
		}), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := t.TempDir() + "/l.db"
			s, err := Open(path, testOpts, nil)
			if err != nil {
				t.Fatal(err)
			}
			entries := numbered("m", 5)
			entries[3].TaskID = "t"
			mustAppend(t, s, "local", "c", entries...)
			mustAppend(t, s, "local", "other", numbered("o", 2)...)
			if err := s.Verify(t.Context(), "local", "c"); err != nil {
				t.Fatalf("Verify() before tampering error = %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error { tt.tamper(t, tx); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			s = mustOpenPath(t, path, testOpts)
			err = s.Verify(t.Context(), "local", "c")
			var ce *ChainError
			if !errors.As(err, &ce) || !errors.Is(err, ErrChainBroken) {
				t.Fatalf("Verify() error = %v, want a *ChainError wrapping ErrChainBroken", err)
			}
			if ce.Seq != tt.wantSeq || ce.ContextID != "c" || ce.Owner != "local" || ce.Key != conversations.Key("local", "c") {
				t.Errorf("ChainError = %+v, want seq %d of contextId c owner local", ce, tt.wantSeq)
			}
			n, err := s.VerifyAll(t.Context())
			if n != 2 || !errors.Is(err, ErrChainBroken) {
				t.Errorf("VerifyAll() = %d, %v, want 2 checked and ErrChainBroken", n, err)
			}
			if err := s.Verify(t.Context(), "local", "other"); err != nil {
				t.Errorf("Verify(other) error = %v, want nil", err)
			}
		})
	}
}

func TestVerify_NotFound(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	if err := s.Verify(t.Context(), "local", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Verify() error = %v, want %v", err, ErrNotFound)
	}
	if n, err := s.VerifyAll(t.Context()); n != 0 || err != nil {
		t.Fatalf("VerifyAll() on empty store = %d, %v, want 0, nil", n, err)
	}
}

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%q not found in %s", old, s)
	}
	return strings.Replace(s, old, new, 1)
}

func TestVerify_ArtifactTampered(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/l.db"
	s, err := Open(path, Options{NoSync: true, LargePartBytes: 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := mustAppend(t, s, "local", "c", userMsg("short"), userMsg(strings.Repeat("long ", 10)))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	digest, _ := parseRef(res.Entries[1].Parts[0].ArtifactRef)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketArtifacts).Put([]byte(digest), []byte("something else"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path, testOpts)
	var ce *ChainError
	if err := s.Verify(t.Context(), "local", "c"); !errors.As(err, &ce) || ce.Seq != 2 {
		t.Fatalf("Verify() error = %v, want a ChainError at seq 2", err)
	}
}
