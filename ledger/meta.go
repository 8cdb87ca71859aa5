package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// metaRecord is a conversation's metadata: in its head (log.go: appendHead), and in
// format 1 the value of its bucket's keyMeta key (format1.go). Every append rewrites it,
// so it has a compact binary encoding (see appendMeta) rather than JSON.
type metaRecord struct {
	ContextID    string
	Owner        string
	CreatedAt    time.Time
	LastActivity time.Time
	LastSeq      uint64
	LastHash     string // "" before the first entry
	Epoch        uint64
	Counters     counters
	LastTaskID   string
}

type counters struct {
	Entries int
	Turns   int // USER_MESSAGE entries that are MODEL_VISIBLE
	Tasks   int
}

// metaVersion is the first byte of an encoded metaRecord. A record in another version is
// refused as unreadable, so a change of the encoding takes a new version number.
const metaVersion = 1

// appendMeta appends the encoding of m to b: metaVersion, then LastSeq, Epoch and the
// three counters as uvarints, CreatedAt and LastActivity as a varint of Unix seconds and a
// uvarint of nanoseconds each, then LastHash, LastTaskID, ContextID and Owner as a uvarint
// length followed by the bytes.
func appendMeta(b []byte, m *metaRecord) []byte {
	b = append(b, metaVersion)
	b = binary.AppendUvarint(b, m.LastSeq)
	b = binary.AppendUvarint(b, m.Epoch)
	b = binary.AppendUvarint(b, uint64(m.Counters.Entries))
	b = binary.AppendUvarint(b, uint64(m.Counters.Turns))
	b = binary.AppendUvarint(b, uint64(m.Counters.Tasks))
	for _, t := range []time.Time{m.CreatedAt, m.LastActivity} {
		b = binary.AppendVarint(b, t.Unix())
		b = binary.AppendUvarint(b, uint64(t.Nanosecond()))
	}
	for _, s := range []string{m.LastHash, m.LastTaskID, m.ContextID, m.Owner} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// decodeMeta is the inverse of appendMeta. Times come back in UTC. It refuses another
// version, a truncated record, counters beyond int and trailing bytes.
func decodeMeta(v []byte) (metaRecord, error) {
	var m metaRecord
	if len(v) == 0 {
		return m, errors.New("empty record")
	}
	if v[0] != metaVersion {
		return m, fmt.Errorf("record version %d, this build reads version %d", v[0], metaVersion)
	}
	d := metaDecoder{b: v[1:]}
	m.LastSeq = d.uvarint()
	m.Epoch = d.uvarint()
	m.Counters.Entries = d.count()
	m.Counters.Turns = d.count()
	m.Counters.Tasks = d.count()
	m.CreatedAt = d.time()
	m.LastActivity = d.time()
	m.LastHash = d.string()
	m.LastTaskID = d.string()
	m.ContextID = d.string()
	m.Owner = d.string()
	switch {
	case d.err != nil:
		return metaRecord{}, d.err
	case len(d.b) > 0:
		return metaRecord{}, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return m, nil
}

// metaDecoder reads the fields of an encoded metaRecord; after the first error every read
// returns a zero value and err keeps that error.
type metaDecoder struct {
	b   []byte
	err error
}

var errMetaTruncated = errors.New("truncated record")

func (d *metaDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errMetaTruncated
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *metaDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errMetaTruncated
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *metaDecoder) count() int {
	x := d.uvarint()
	if x > uint64(maxInt) {
		d.fail(fmt.Errorf("counter %d out of range", x))
		return 0
	}
	return int(x)
}

const maxInt = int(^uint(0) >> 1)

func (d *metaDecoder) time() time.Time {
	sec, nsec := d.varint(), d.uvarint()
	if nsec >= uint64(time.Second) {
		d.fail(fmt.Errorf("nanoseconds %d out of range", nsec))
	}
	if d.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (d *metaDecoder) string() string {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.err = errMetaTruncated
	}
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *metaDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}
