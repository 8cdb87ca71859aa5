package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A redo is the record of every write of one write transaction, in order, for
// the write-ahead log (wal.go): replaying it on the file as it was before the transaction
// makes the same file contents. Writes reach it through [wbucket]s; a nil *redo records
// nothing (a salvage's or an upgrade's copy, a file without a log).
type redo struct {
	ops []byte // the encoded operations (see the op constants)
	n   int    // how many
}

// Redo operations. Every write names a top-level bucket.
const (
	opPut    byte = 1 // bucket, key, value
	opDelete byte = 2 // bucket, key
	opClear  byte = 3 // bucket: delete it and create it empty
	opSeq    byte = 4 // bucket, sequence: set the bucket's sequence
)

func (r *redo) reset() { r.ops, r.n = r.ops[:0], 0 }

func (r *redo) add(op byte, bucket, key, value []byte) {
	r.ops = append(r.ops, op)
	r.ops = binary.AppendUvarint(r.ops, uint64(len(bucket)))
	r.ops = append(r.ops, bucket...)
	r.ops = binary.AppendUvarint(r.ops, uint64(len(key)))
	r.ops = append(r.ops, key...)
	if op == opPut {
		r.ops = binary.AppendUvarint(r.ops, uint64(len(value)))
		r.ops = append(r.ops, value...)
	}
	r.n++
}

func (r *redo) addSeq(bucket []byte, seq uint64) {
	r.ops = append(r.ops, opSeq)
	r.ops = binary.AppendUvarint(r.ops, uint64(len(bucket)))
	r.ops = append(r.ops, bucket...)
	r.ops = binary.AppendUvarint(r.ops, seq)
	r.n++
}

// wbucket is a top-level bucket of a write transaction whose writes go to the
// transaction's redo (r, nil: none) as well. Reads are bbolt's.
type wbucket struct {
	*bolt.Bucket
	name []byte
	r    *redo
}

// wb returns the top-level bucket name of tx, recording its writes in r (Bucket nil if
// it is missing).
func wb(tx *bolt.Tx, r *redo, name []byte) wbucket {
	return wbucket{Bucket: tx.Bucket(name), name: name, r: r}
}

// Put is bbolt's Put, recorded.
func (b wbucket) Put(key, value []byte) error {
	if err := b.Bucket.Put(key, value); err != nil {
		return err
	}
	if b.r != nil {
		b.r.add(opPut, b.name, key, value)
	}
	return nil
}

// Delete is bbolt's Delete, recorded.
func (b wbucket) Delete(key []byte) error {
	if err := b.Bucket.Delete(key); err != nil {
		return err
	}
	if b.r != nil {
		b.r.add(opDelete, b.name, key, nil)
	}
	return nil
}

// NextSequence is bbolt's NextSequence, recorded as the sequence it sets.
func (b wbucket) NextSequence() (uint64, error) {
	seq, err := b.Bucket.NextSequence()
	if err == nil && b.r != nil {
		b.r.addSeq(b.name, seq)
	}
	return seq, err
}

// clearBucket replaces the top-level bucket name of tx with an empty one, recorded in r.
func clearBucket(tx *bolt.Tx, r *redo, name []byte) error {
	if err := tx.DeleteBucket(name); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(name); err != nil {
		return err
	}
	if r != nil {
		r.add(opClear, name, nil, nil)
	}
	return nil
}

// errRedo: a redo record does not decode.
var errRedo = errors.New("ledger: write-ahead log: operation does not decode")

// replayRedo applies the n operations encoded in ops to tx.
func replayRedo(tx *bolt.Tx, ops []byte) error {
	for len(ops) > 0 {
		op := ops[0]
		bucket, rest, ok := cutBytes(ops[1:])
		if !ok {
			return errRedo
		}
		b := tx.Bucket(bucket)
		if b == nil && op != opClear {
			return fmt.Errorf("ledger: write-ahead log: bucket %q missing", bucket)
		}
		switch op {
		case opSeq:
			seq, n := binary.Uvarint(rest)
			if n <= 0 {
				return errRedo
			}
			if err := b.SetSequence(seq); err != nil {
				return err
			}
			ops = rest[n:]
			continue
		case opClear:
			if _, rest, ok = cutBytes(rest); !ok {
				return errRedo
			}
			if err := clearBucket(tx, nil, bucket); err != nil {
				return err
			}
			ops = rest
			continue
		}
		key, rest, ok := cutBytes(rest)
		if !ok {
			return errRedo
		}
		var err error
		switch op {
		case opPut:
			var value []byte
			if value, rest, ok = cutBytes(rest); !ok {
				return errRedo
			}
			err = b.Put(key, value)
		case opDelete:
			err = b.Delete(key)
		default:
			return errRedo
		}
		if err != nil {
			return err
		}
		ops = rest
	}
	return nil
}

// cutBytes splits a uvarint-length-prefixed byte string off the front of b.
func cutBytes(b []byte) (s, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}
