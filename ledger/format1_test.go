package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// Format 1 is only read now, by the upgrade and by a salvage (format1.go). Its files for
// the tests are made by writeFormat1, a test-only writer: the content is appended
// through a Store (format 2), and the file is then written in format 1's layout from it,
// as the builds that wrote format 1 stored the same appends (entries byte for byte, the
// metadata record, the task index's entry keys, the by-contextId index of every
// conversation). testdata/v1-ledger.db, written by such a build, pins that this writer
// and those builds agree (TestV1Ledger, TestUpgrade_Fixture).

// writeFormat1 writes a format-1 ledger file at path holding what fill appends to a Store
// opened with opts (NoSync is set).
func writeFormat1(tb testing.TB, path string, opts Options, fill func(s *Store)) {
	tb.Helper()
	src := filepath.Join(tb.TempDir(), "format2.db")
	opts.NoSync = true
	s, err := Open(src, opts, nil)
	if err != nil {
		tb.Fatal(err)
	}
	fill(s)
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	sdb, err := bolt.Open(src, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer sdb.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: pageSize, NoFreelistSync: true, FreelistType: bolt.FreelistArrayType})
	if err != nil {
		tb.Fatal(err)
	}
	err = sdb.View(func(stx *bolt.Tx) error {
		return db.Update(func(tx *bolt.Tx) error { return format1From(stx, tx) })
	})
	if err := errors.Join(err, db.Close()); err != nil {
		tb.Fatal(err)
	}
}

// format1From writes the content of the format-2 file open in stx to the empty file open
// in tx, in format 1's layout 2.
func format1From(stx, tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketArtifacts, bucketQuarantine, bucketPushConfigs, bucketPushPending, bucketRunning} {
		if err := copyBucket1(stx, tx, name); err != nil {
			return err
		}
	}
	tasks, err := tx.CreateBucket(bucketTasks)
	if err != nil {
		return err
	}
	err = stx.Bucket(bucketTasks).ForEach(func(k, v []byte) error {
		if bytes.IndexByte(k, 0) >= 0 {
			v = nil // an entry key: empty in format 1, the log position in format 2
		}
		return tasks.Put(bytes.Clone(k), bytes.Clone(v))
	})
	if err != nil {
		return err
	}
	if err := tasks.SetSequence(layoutFormat1); err != nil {
		return err
	}
	byID, err := tx.CreateBucket(bucketByID)
	if err != nil {
		return err
	}
	for _, key := range headKeys(stx) {
		m, err := conv1From(stx, tx, key)
		if err != nil {
			return err
		}
		if err := byID.Put(byIDKey(m.ContextID, key), nil); err != nil {
			return err
		}
	}
	return nil
}

// conv1From writes conversation key of the format-2 file open in stx as a format-1
// bucket in tx (its entries, then its metadata) and returns its head.
func conv1From(stx, tx *bolt.Tx, key string) (metaRecord, error) {
	m, lastPos, err := readHead(stx, key)
	if err != nil {
		return m, err
	}
	l, err := openLog(stx, key, &m, lastPos)
	if err != nil {
		return m, err
	}
	conv, err := tx.CreateBucket([]byte(key))
	if err != nil {
		return m, err
	}
	err = l.back(m.LastSeq, func(seq uint64, r logRecord) (bool, error) {
		return true, conv.Put(entryKey(seq), bytes.Clone(r.entry))
	})
	if err != nil {
		return m, err
	}
	return m, conv.Put(keyMeta, appendMeta(nil, &m))
}

// copyBucket1 copies bucket name of stx (if it has one) into tx.
func copyBucket1(stx, tx *bolt.Tx, name []byte) error {
	sb := stx.Bucket(name)
	if sb == nil {
		return nil
	}
	b, err := tx.CreateBucket(name)
	if err != nil {
		return err
	}
	return sb.ForEach(func(k, v []byte) error { return b.Put(bytes.Clone(k), bytes.Clone(v)) })
}

// TestFormat1Writer: what writeFormat1 writes is a format-1 file of the checked-in
// fixture's layout: the same content as testdata/v1-ledger.db (written by a build that
// wrote format 1), key for key and value for value, in every bucket of that file; and the
// indexes later format-1 builds added beside them (which that file predates).
func TestFormat1Writer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	writeFormat1(t, path, v1Options(), func(s *Store) { appendV1Fixture(t, s) })
	later := []string{string(bucketByID), string(bucketPushConfigs), string(bucketPushPending), string(bucketRunning)}
	want, got := dumpLedgerFile(t, v1LedgerFile, nil), dumpLedgerFile(t, path, later)
	if want != got {
		t.Errorf("writeFormat1 wrote\n%s\nthe checked-in format-1 file holds\n%s", got, want)
	}
	all := dumpLedgerFile(t, path, nil)
	for _, name := range later {
		if !strings.Contains(all, fmt.Sprintf("%q seq", name)) {
			t.Errorf("writeFormat1 wrote no %s", name)
		}
	}
}

// dumpLedgerFile lists every top-level bucket of the bbolt file at path but those of skip
// (nested ones too), its sequence, keys and values, as text.
func dumpLedgerFile(t *testing.T, path string, skip []string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	var dump func(prefix string, bk *bolt.Bucket)
	dump = func(prefix string, bk *bolt.Bucket) {
		fmt.Fprintf(&b, "%q seq %d\n", prefix, bk.Sequence())
		_ = bk.ForEach(func(k, v []byte) error {
			if v == nil {
				dump(prefix+"/"+string(k), bk.Bucket(k))
				return nil
			}
			fmt.Fprintf(&b, "%q %q = %q\n", prefix, k, v)
			return nil
		})
	}
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			if !slices.Contains(skip, string(name)) {
				dump(string(name), bk)
			}
			return nil
		})
	})
	return b.String()
}

// TestFormat1_VerifyDetectsTampering: the upgrade's verification of a format-1 file
// (verifyFormat1) finds every kind of edit of its conversations and indexes and names
// the first failing seq; the upgrade then refuses the file and leaves it as it was, and
// Open fails naming the commands that take it from there.
func TestFormat1_VerifyDetectsTampering(t *testing.T) {
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
	putMeta := func(f func(m *metaRecord)) func(t *testing.T, tx *bolt.Tx) {
		return rewrite(func(t *testing.T, conv *bolt.Bucket) {
			m, err := decodeMeta(conv.Get(keyMeta))
			if err != nil {
				t.Fatal(err)
			}
			f(&m)
			if err := conv.Put(keyMeta, appendMeta(nil, &m)); err != nil {
				t.Fatal(err)
			}
		})
	}
	del := func(k []byte) func(t *testing.T, tx *bolt.Tx) {
		return rewrite(func(t *testing.T, conv *bolt.Bucket) {
			if err := conv.Delete(k); err != nil {
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
		{"removed entry", del(entryKey(3)), 3},
		{"swapped entries", rewrite(func(t *testing.T, conv *bolt.Bucket) {
			a, b := bytes.Clone(conv.Get(entryKey(2))), bytes.Clone(conv.Get(entryKey(3)))
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
		{"truncated tail", del(entryKey(5)), 5},
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
		{"metadata last task", putMeta(func(m *metaRecord) { m.LastTaskID = "" }), 0},
		{"metadata counters", putMeta(func(m *metaRecord) { m.Counters.Turns-- }), 0},
		{"metadata missing", del(keyMeta), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "ledger.db")
			writeFormat1(t, path, Options{}, func(s *Store) {
				entries := numbered("m", 5)
				entries[3].TaskID = "t"
				mustAppend(t, s, "local", "c", entries...)
				mustAppend(t, s, "local", "other", numbered("o", 2)...)
			})
			if n, err := verifyFile1(t, path); n != 2 || err != nil {
				t.Fatalf("verifyFormat1() before tampering = %d, %v", n, err)
			}
			tamperFile(t, path, func(tx *bolt.Tx) { tt.tamper(t, tx) })
			before := dumpLedgerFile(t, path, nil)

			n, err := verifyFile1(t, path)
			var ce *ChainError
			if n != 2 || !errors.As(err, &ce) || !errors.Is(err, ErrChainBroken) {
				t.Fatalf("verifyFormat1() = %d, %v; want 2 checked and a *ChainError", n, err)
			}
			if ce.Seq != tt.wantSeq || ce.Key != contextid.Key("local", "c") || (tt.wantSeq > 0 && (ce.ContextID != "c" || ce.Owner != "local")) {
				t.Errorf("ChainError = %+v, want seq %d of contextId c owner local", ce, tt.wantSeq)
			}
			if _, err := Upgrade(t.Context(), path, nil); err == nil || !strings.Contains(err.Error(), "does not verify") {
				t.Fatalf("Upgrade() error = %v, want the old file's verification failure", err)
			}
			s, err := Open(path, testOpts, nil)
			if err == nil {
				s.Close()
				t.Fatal("Open() of a format-1 file that does not verify: nil error")
			}
			for _, want := range []string{"format 1", "gateway ledger upgrade", "gateway ledger salvage", "does not verify"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open() error = %v, want it to say %q", err, want)
				}
			}
			if after := dumpLedgerFile(t, path, nil); after != before {
				t.Error("the refused upgrade and Open changed the file")
			}
			for _, name := range []string{path + ".format2.tmp", path + ".format1.bak"} {
				if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists after a refused upgrade: %v", name, err)
				}
			}
		})
	}
}

// verifyFile1 runs verifyFormat1 on the format-1 file at path, opened read-only.
func verifyFile1(t *testing.T, path string) (int, error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return verifyFormat1(t.Context(), db, nil, nil)
}

// TestFormat1Damaged: a format-1 file with damage (a page of a conversation, an entry's
// bytes) cannot be upgraded whole. An offline Open refuses it and leaves it as it is; a
// salvage copies its intact conversations into a format-2 file; Open with
// Options.SalvageDamaged (the server) does that in place and serves them, refusing the
// damaged one as lost.
func TestFormat1Damaged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, f *damageFixture)
	}{
		{"page_header", func(t *testing.T, f *damageFixture) {
			id := f.readRoot(t, func(tx *bolt.Tx) uint64 { return uint64(tx.Bucket([]byte(key(f.victim))).Root()) })
			if id == 0 {
				t.Fatal("the victim's bucket is inline: the fixture needs it in pages of its own")
			}
			f.edit(t, func(b []byte) { f.page(b, id)[0] ^= 0x01 })
		}},
		{"entry_json", func(t *testing.T, f *damageFixture) {
			f.edit(t, func(b []byte) { atMarker(t, b, f.victim, 2, func(at int) { b[at] = 0x01 }) })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			f := &damageFixture{path: filepath.Join(t.TempDir(), "ledger.db"), pageSize: pageSize,
				intact: []string{"intact-1", "intact-2"}, victim: "victim"}
			writeFormat1(t, f.path, Options{}, func(s *Store) {
				for _, cid := range []string{"intact-1", "victim", "intact-2"} {
					for i := range 4 {
						appendTurn(t, ctx, s, cid, i)
					}
				}
			})
			tc.damage(t, f)
			before := dumpBytes(t, f.path)
			if s, err := Open(f.path, testOpts, nil); err == nil || !strings.Contains(err.Error(), "gateway ledger salvage") {
				if s != nil {
					s.Close()
				}
				t.Fatalf("offline Open() error = %v, want a refusal naming gateway ledger salvage", err)
			}
			if !bytes.Equal(dumpBytes(t, f.path), before) {
				t.Fatal("the refused Open changed the file")
			}

			dst := filepath.Join(t.TempDir(), "salvaged.db")
			rep, err := Salvage(ctx, f.path, dst, nil)
			if err != nil || rep.Copied != 2 || len(rep.Skipped) != 1 || rep.Skipped[0].Key != key(f.victim) {
				t.Fatalf("Salvage() = %+v, %v; want the two intact conversations copied, the victim skipped", rep, err)
			}
			if format1File(t, dst) {
				t.Error("the salvaged copy is in format 1")
			}
			c := mustOpenPath(t, dst, testOpts)
			if n, err := c.VerifyAll(ctx); n != 2 || err != nil {
				t.Errorf("VerifyAll(copy) = %d, %v", n, err)
			}

			s := mustOpenPath(t, f.path, Options{NoSync: true, SalvageDamaged: true})
			for _, cid := range f.intact {
				if got, err := s.Range(ctx, damageOwner, cid, 0, 0); err != nil || len(got) != 8 {
					t.Errorf("Range(%s) = %d entries, %v; want 8", cid, len(got), err)
				}
				appendTurn(t, ctx, s, cid, 4)
			}
			if _, err := s.Range(ctx, damageOwner, f.victim, 0, 0); !errors.Is(err, ErrQuarantined) {
				t.Errorf("Range(victim) error = %v, want ErrQuarantined", err)
			}
			if q := s.Quarantined(); len(q) != 1 || q[0].Key != key(f.victim) || !q[0].Lost {
				t.Errorf("Quarantined() = %+v, want the victim, lost", q)
			}
		})
	}
}

// dumpBytes returns the bytes of the file at path.
func dumpBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
