package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"

	"github.com/a2a-gateway/gateway/contextid"
)

// chargeConvs charges a damaged leaf page of a format-2 tree to the conversations whose
// data it holds, as far as its elements can be read: a log page to the conversations of
// its records, a heads page to the conversations of its keys. The fault stays charged to
// the tree too. Other trees charge nobody.
func (s *pageScan) chargeConvs(buf []byte, id uint64, owner string, count int) {
	var convOf func(k, v []byte) string
	switch owner {
	case string(bucketLog):
		convOf = func(_, v []byte) string {
			if len(v) < 1+hashLen || v[0] != logRecordVersion {
				return ""
			}
			return "v1/" + hex.EncodeToString(v[1:1+hashLen])
		}
	case string(bucketHeads), string(bucketRecent):
		convOf = func(k, _ []byte) string { return string(k) }
	default:
		return
	}
	seen := map[string]bool{}
	for i := range count {
		off := pageHeaderSize + i*pageElemSize
		if off+pageElemSize > len(buf) {
			return
		}
		pos, ksize := binary.LittleEndian.Uint32(buf[off+4:]), binary.LittleEndian.Uint32(buf[off+8:])
		vsize := binary.LittleEndian.Uint32(buf[off+12:])
		kv := slice(buf, off+int(pos), int(ksize)+int(vsize))
		if kv == nil {
			continue
		}
		key := convOf(kv[:ksize], kv[ksize:])
		if !contextid.IsCurrentKey(key) || seen[key] {
			continue
		}
		seen[key] = true
		s.fail(key, "its data lies in damaged page %d of %s", id, owner)
	}
}

// logLeaf checks leaf page id of the log from its header and its first and last keys
// only (the log is most of a format-2 file, and reading every byte of it would make Open
// take time proportional to the ledger): its id, type, element count and key bounds.
// done is false, and nothing is recorded, when the page is not such a leaf or any of
// that fails: the full check (tree's read and node) runs then and names the fault.
func (s *pageScan) logLeaf(id uint64, lo, hi []byte) (first []byte, done bool) {
	var head [pageHeaderSize + pageElemSize]byte
	if _, err := s.r.ReadAt(head[:], int64(id)*int64(s.pageSize)); err != nil {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(head[10:]))
	if binary.LittleEndian.Uint64(head[:]) != id || binary.LittleEndian.Uint16(head[8:]) != leafPageFlag ||
		binary.LittleEndian.Uint32(head[12:]) != 0 || count == 0 || pageHeaderSize+count*pageElemSize > s.pageSize {
		return nil, false
	}
	firstKey, ok := s.elemKey(id, 0, head[pageHeaderSize:])
	if !ok {
		return nil, false
	}
	last := make([]byte, pageElemSize)
	if _, err := s.r.ReadAt(last, int64(id)*int64(s.pageSize)+int64(pageHeaderSize+(count-1)*pageElemSize)); err != nil {
		return nil, false
	}
	lastKey, ok := s.elemKey(id, count-1, last)
	if !ok || (lo != nil && bytes.Compare(firstKey, lo) < 0) || (hi != nil && bytes.Compare(lastKey, hi) >= 0) ||
		bytes.Compare(firstKey, lastKey) > 0 {
		return nil, false
	}
	return firstKey, true
}

// elemKey reads the key of leaf element i of page id, whose 16-byte element is elem: a
// log key is 8 bytes.
func (s *pageScan) elemKey(id uint64, i int, elem []byte) ([]byte, bool) {
	pos, ksize := binary.LittleEndian.Uint32(elem[4:]), binary.LittleEndian.Uint32(elem[8:])
	off := pageHeaderSize + i*pageElemSize + int(pos)
	if ksize != seqLen || off+seqLen > s.pageSize {
		return nil, false
	}
	k := make([]byte, seqLen)
	if _, err := s.r.ReadAt(k, int64(id)*int64(s.pageSize)+int64(off)); err != nil {
		return nil, false
	}
	return k, true
}

// fullCheckMax is the size of file up to which Open checks every page of a format-2
// file (about 40 ms here); a bigger one gets rightEdgesOnly.
const fullCheckMax = 256 << 20

// rightEdgesOnly reports whether Open's page check of a file of this format and size
// reads only the file's tree of buckets and the right edge of each bucket's tree (what
// the first appends write), so that Open does not take time proportional to the ledger
// (1.8 s for 1,000,000 conversations): a format-2 file over fullCheckMax. bbolt reads its
// freelist from the file then (format 2 syncs it) instead of walking every page, so no
// damaged page can crash Open. A damaged page elsewhere is met by the read that needs it
// (the conversation is quarantined, as when a read meets damage) and by VerifyAll and
// `gateway ledger verify`, which check every page.
func rightEdgesOnly(format int, size int64) bool {
	return format == Format2 && size > fullCheckMax
}
