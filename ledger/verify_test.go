package ledger

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

func TestVerify_DetectsTampering(t *testing.T) {
	format1Only(t)
	t.Parallel()
	rewrite := func(f func(t *testing.T, conv *bolt.Bucket)) func(t *testing.T, tx *bolt.Tx) {
		return func(t *testing.T, tx *bolt.Tx) {
			f(t, tx.Bucket([]byte(contextid.Key("local", "c"))))
		}
	}
	replace := func(old, new string) func(t *testing.T, tx *bolt.Tx) {
		return rewrite(func(t *testing.T, conv *bolt.Bucket) {
			v := replaceOnce(t, string(conv.Get(entryKey(3))), old, new)
			if err := conv.Put(entryKey(3), []byte(v)); err != nil {
				t.Fatal(err)
			}
		})
	}
	tests := []struct {
		name    string
		tamper  func(t *testing.T, tx *bolt.Tx)
		wantSeq uint64
	}{
		{"edited text", replace(`"text":"m-3"`, `"text":"m-X"`), 3},
		{"edited trust", replace(`"trust":"PEER_UNTRUSTED"`, `"trust":"OPERATOR_TRUSTED"`), 3},
		{"removed entry", rewrite(func(t *testing.T, conv *bolt.Bucket) {
			if err := conv.Delete(entryKey(3)); err != nil {
				t.Fatal(err)
			}
		}), 3},
		{"swapped entries", rewrite(func(t *testing.T, conv *bolt.Bucket) {
			a, b := append([]byte(nil), conv.Get(entryKey(2))...), append([]byte(nil), conv.Get(entryKey(3))...)
			if conv.Put(entryKey(2), b) != nil || conv.Put(entryKey(3), a) != nil {
				t.Fatal("put failed")
			}
		}), 2},
		{"garbage value", rewrite(func(t *testing.T, conv *bolt.Bucket) {
			if err := conv.Put(entryKey(3), []byte("{not json")); err != nil {
				t.Fatal(err)
			}
		}), 3},
		{"entry of another conversation", func(t *testing.T, tx *bolt.Tx) {
			v := tx.Bucket([]byte(contextid.Key("local", "other"))).Get(entryKey(2))
			if err := tx.Bucket([]byte(contextid.Key("local", "c"))).Put(entryKey(2), bytes.Clone(v)); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"truncated tail", rewrite(func(t *testing.T, conv *bolt.Bucket) {
			if err := conv.Delete(entryKey(5)); err != nil {
				t.Fatal(err)
			}
		}), 5},
		{"task index entry removed", func(t *testing.T, tx *bolt.Tx) {
			if err := tx.Bucket(bucketTasks).Delete(taskKey("t", 4)); err != nil {
				t.Fatal(err)
			}
		}, 4},
		{"task linked to a task that does not exist", func(t *testing.T, tx *bolt.Tx) {
			if err := tx.Bucket(bucketTasks).Put([]byte("t"), taskHead(contextid.Key("local", "c"), "ghost")); err != nil {
				t.Fatal(err)
			}
		}, 4},
		{"task moved to another conversation", func(t *testing.T, tx *bolt.Tx) {
			if err := tx.Bucket(bucketTasks).Put([]byte("t"), []byte(contextid.Key("local", "other"))); err != nil {
				t.Fatal(err)
			}
		}, 4},
		{"metadata last task", rewrite(func(t *testing.T, conv *bolt.Bucket) {
			m, err := decodeMeta(conv.Get(keyMeta))
			if err != nil || m.LastTaskID != "t" {
				t.Fatalf("decodeMeta() = %+v, %v, want last task t", m, err)
			}
			m.LastTaskID = ""
			if err := conv.Put(keyMeta, appendMeta(nil, &m)); err != nil {
				t.Fatal(err)
			}
		}), 0},
		{"metadata counters", rewrite(func(t *testing.T, conv *bolt.Bucket) {
			m, err := decodeMeta(conv.Get(keyMeta))
			if err != nil || m.Counters.Turns != 5 {
				t.Fatalf("decodeMeta() = %+v, %v, want 5 turns", m, err)
			}
			m.Counters.Turns = 4
			if err := conv.Put(keyMeta, appendMeta(nil, &m)); err != nil {
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
			if ce.Seq != tt.wantSeq || ce.ContextID != "c" || ce.Owner != "local" || ce.Key != contextid.Key("local", "c") {
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
