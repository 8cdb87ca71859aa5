package ledger

import (
	"encoding/binary"
	"encoding/hex"

	"github.com/a2a-gateway/gateway/conversations/contextid"
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
