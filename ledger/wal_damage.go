package ledger

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"time"
)

// How the records of a write-ahead log end, and what Open tells the operator about it.
// Recovery replays the whole records of the header's generation, in order, up to the
// first one that is not whole; the rest of the log is not replayed (a record depends on
// the ones before it). Where they end says why:
//
//   - Zeros (the log grows by zeros written ahead, and a record taken back is zeroed), or
//     a record of an earlier generation: the log ends there. Nothing is said.
//   - A record of this generation that fails its checksum, with nothing of the
//     generation after it: a write cut short by a crash (never acknowledged: its
//     fdatasync did not return), or damage to the last record. Warned.
//   - A record that fails its checks with whole records of the generation after it
//     (chained to the damaged one's CRC, as written or as computed): damage in the
//     middle. The records from the damaged one on were acknowledged and are lost.
//     An error, and the log is kept beside it as it was (<log>.damaged-<time>).
//   - The file ends inside a record: it was cut short (a record is written only inside
//     the part of the file already grown and fdatasync'd). Likewise an error.
//   - Records of a later generation than the newest valid header's, or no valid header
//     but records: the newest header is damaged; its records cannot be replayed (the
//     base they follow is in it). Likewise an error.
//   - The file is not a multiple of walGrowBytes and does not end in zeros: it was
//     truncated, and commits after its end may be lost. Warned.

// walEndKind is why a log's records end where they do.
type walEndKind int

const (
	walEndClean   walEndKind = iota // zeros, or an earlier generation's bytes
	walEndTorn                      // this generation's next record is not whole, and nothing follows
	walEndDamaged                   // a record fails its checks, and whole records follow it
	walEndCut                       // the file ends inside a record
	walEndHeader                    // records of a generation whose header is damaged
	walEndShort                     // the file is shorter than it was grown
)

// walEnd is where and why a log's records end.
type walEnd struct {
	kind     walEndKind
	at       int64  // the offset in the log where the whole records end
	lost     int    // walEndDamaged, walEndHeader: the whole records found past it
	from, to uint64 // their first and last transaction
}

// recordsEnd classifies the end at off of the records of h's generation in data (the
// log after its header slots; crc: the chain there; size: the log file's size).
func recordsEnd(data []byte, off int, crc uint32, h *walHeader, size int64) walEnd {
	end := walEnd{at: walFirstRecord + int64(off)}
	rest := data[off:]
	if g, ok := genAt(data, 0); off == 0 && ok && g > h.gen { // written after a header that is now damaged
		end.kind = walEndHeader
		end.lost, end.from, end.to = walkGen(data, g)
		return end
	}
	if len(rest) >= walRecordHead && binary.BigEndian.Uint64(rest) != 0 { // a length or a CRC: not the end
		if n, from, to := laterRecords(data, off, crc, h.gen); n > 0 {
			end.kind, end.lost, end.from, end.to = walEndDamaged, n, from, to
			return end
		}
		if ofGeneration(rest, crc, h.gen) {
			end.kind = walEndTorn
			if n := int(binary.BigEndian.Uint32(rest)); n+8 > len(rest) { // a record is written where the file has grown
				end.kind = walEndCut
			}
			return end
		}
	}
	// The file grows by walGrowBytes of zeros (a crash while it grows leaves zeros after
	// the records): ending elsewhere, right after the records or in other bytes, it was
	// cut short.
	if size%walGrowBytes != 0 && (len(rest) == 0 || !allZero(rest)) {
		end.kind = walEndShort
	}
	return end
}

// headerless classifies a log without a valid header: records at its start mean its
// headers are damaged.
func headerless(data []byte) walEnd {
	end := walEnd{at: walFirstRecord}
	if g, ok := genAt(data, 0); ok && g > 0 {
		end.kind = walEndHeader
		end.lost, end.from, end.to = walkGen(data, g)
	}
	return end
}

// genAt returns the generation of the record at off of data, if one with a plausible
// length starts there.
func genAt(data []byte, off int) (uint64, bool) {
	if len(data)-off < walRecordHead {
		return 0, false
	}
	n := int(binary.BigEndian.Uint32(data[off:]))
	if n < walRecordHead-8 || n > len(data)-off-8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(data[off+8:]), true
}

// walkGen counts the records of generation gen from the start of data by their lengths
// alone (their chain starts at a header that is lost), with their first and last
// transaction.
func walkGen(data []byte, gen uint64) (n int, from, to uint64) {
	for off := 0; ; {
		g, ok := genAt(data, off)
		if !ok || g != gen {
			return n, from, to
		}
		tx := binary.BigEndian.Uint64(data[off+16:])
		if n == 0 {
			from = tx
		}
		n, to = n+1, tx
		off += 8 + int(binary.BigEndian.Uint32(data[off:]))
	}
}

// ofGeneration reports whether rest starts with a record of generation gen that fails
// its checks: its generation field says so, or its CRC (chained to crc) matches once
// that field is read as gen.
func ofGeneration(rest []byte, crc uint32, gen uint64) bool {
	if len(rest) >= 16 && binary.BigEndian.Uint64(rest[8:]) == gen {
		return true
	}
	n := int(binary.BigEndian.Uint32(rest))
	if n < walRecordHead-8 || n > len(rest)-8 {
		return false
	}
	body := bytes.Clone(rest[8 : 8+n])
	binary.BigEndian.PutUint64(body, gen)
	return crc32.Update(crc, walCRC, body) == binary.BigEndian.Uint32(rest[4:])
}

// laterRecords looks past the record at off of data, which is not whole, for whole
// records of generation gen chained to it: to its CRC as written, or as computed from
// its body (its CRC field may be the damaged part); a damaged length is stepped over by
// trying every later place where gen is written. It returns how many chain from the
// first place found, and their first and last transaction.
func laterRecords(data []byte, off int, crc uint32, gen uint64) (n int, from, to uint64) {
	seeds := []uint32{binary.BigEndian.Uint32(data[off+4:])}
	if l := int(binary.BigEndian.Uint32(data[off:])); l >= walRecordHead-8 && l <= len(data)-off-8 {
		seeds = append(seeds, crc32.Update(crc, walCRC, data[off+8:off+8+l]))
	}
	var g [8]byte
	binary.BigEndian.PutUint64(g[:], gen)
	for at := off + 1 + 8; at < len(data); {
		i := bytes.Index(data[at:], g[:])
		if i < 0 {
			break
		}
		for _, seed := range seeds {
			if n, from, to := chainFrom(data, at+i-8, seed, gen); n > 0 {
				return n, from, to
			}
		}
		at += i + 1
	}
	return 0, 0, 0
}

// chainFrom counts the whole records of generation gen from off of data, the first
// chained to seed.
func chainFrom(data []byte, off int, seed uint32, gen uint64) (n int, from, to uint64) {
	for {
		body, sum, ok := recordAt(data, off, seed, gen)
		if !ok {
			return n, from, to
		}
		tx := binary.BigEndian.Uint64(body[8:])
		if n == 0 {
			from = tx
		}
		n, to, seed, off = n+1, tx, sum, off+8+len(body)
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// reportEnd tells the operator, in the log, what the end of the records of l (the
// write-ahead log of the ledger file at path) says; a log that lost acknowledged
// commits is first kept as it is beside it.
func reportEnd(path string, l *walLog, logger *slog.Logger) {
	wal, e := walPath(path), l.end
	attrs := []any{"path", wal, "offset", e.at, "records_replayed", len(l.recs)}
	switch e.kind {
	case walEndClean:
		return
	case walEndTorn:
		logger.Warn("ledger: the write-ahead log ends with a record that is not whole; it is not replayed. "+
			"A crash while it was written leaves one (that commit was never acknowledged); "+
			"after a clean stop it means the log is damaged, and that commit is lost", attrs...)
		return
	case walEndShort:
		logger.Warn("ledger: the write-ahead log is shorter than it was written (truncated?): "+
			"commits written after its end, if any, are lost", attrs...)
		return
	}
	attrs = append(attrs, "kept_as", keepDamagedLog(wal, logger))
	switch e.kind {
	case walEndDamaged:
		attrs = append(attrs, "records_lost", e.lost+1, "lost_txids", fmt.Sprintf("%d-%d", e.from, e.to))
		logger.Error("ledger: the write-ahead log is damaged: the damaged record and the records after it are not replayed, "+
			"and the commits they hold, acknowledged, are lost from the ledger; the log was kept as it was", attrs...)
	case walEndCut:
		logger.Error("ledger: the write-ahead log ends inside a record (the file was cut short: truncated?): "+
			"that record is not replayed and its commit is lost, with any written after it; the log was kept as it was", attrs...)
	case walEndHeader:
		attrs = append(attrs, "records_lost", e.lost, "lost_txids", fmt.Sprintf("%d-%d", e.from, e.to))
		logger.Error("ledger: the write-ahead log's newest header is damaged: the records written after it cannot be "+
			"replayed, and the commits they hold, acknowledged, are lost from the ledger; the log was kept as it was", attrs...)
	}
}

// keepDamagedLog copies the log at wal to <wal>.damaged-<time> and returns that path
// ("" if the copy failed, which is logged).
func keepDamagedLog(wal string, logger *slog.Logger) string {
	kept := wal + ".damaged-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	err := copyFileSynced(wal, kept)
	if err != nil {
		logger.Error("ledger: keep a copy of the damaged write-ahead log", "path", wal, "err", err)
		_ = os.Remove(kept)
		return ""
	}
	return kept
}

// copyFileSynced copies the file from to a new file to, fsync'd.
func copyFileSynced(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}
