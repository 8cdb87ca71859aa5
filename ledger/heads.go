package ledger

import "sync"

// heads remembers, per conversation key, the head (last seq, last hash, epoch) of the
// conversation as the last commit left it, so that an Append can hash and encode its
// entries in the caller's goroutine, before it is queued, instead of in the committer,
// which is the one serial step of every append. It is only a guess: the committer uses
// the precomputed entries only when the stored head equals the guess's base (seq, hash and
// epoch), and otherwise computes them as before. A wrong or missing head costs only that.
//
// The committer updates it after a commit returned and before it answers the batch (so a
// turn's next append sees its previous one), and clears it after a failed commit (the
// transaction rolled back). It holds at most maxHeads conversations; when full it starts
// over.
type heads struct {
	mu sync.Mutex
	m  map[string]head
}

type head struct {
	seq   uint64
	hash  string
	epoch uint64
}

// maxHeads bounds the cache: about 200 bytes per conversation, ~3 MiB in all.
const maxHeads = 1 << 14

func (h *heads) get(key string) (head, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[key]
	return v, ok
}

func (h *heads) put(key string, v head) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxHeads {
		h.m = make(map[string]head)
	}
	h.m[key] = v
}

func (h *heads) clear() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m = nil
}

// guess is a request's entries encoded and hashed ahead of the commit, for a
// conversation whose head was base (seq, hash) with the turn's epoch.
type guess struct {
	baseSeq  uint64
	baseHash string
	epoch    uint64
	filled   []filled // one per entry
}

// filled is one entry encoded and hashed.
type filled struct {
	frame frame
	hash  string
}

// precompute fills p.guess from the cached head of p's conversation, when there is one
// and p's fencing epoch (if any) matches it.
func (s *Store) precompute(p *prepared) {
	h, ok := s.heads.get(p.key)
	if !ok {
		return
	}
	epoch := h.epoch
	if p.epoch != 0 && p.epoch != h.epoch {
		return // fenced: the committer refuses it
	}
	if p.beginTurn {
		epoch++
	}
	g := &guess{baseSeq: h.seq, baseHash: h.hash, epoch: epoch, filled: make([]filled, len(p.templates))}
	prev := h.hash
	for i := range p.templates {
		f := &g.filled[i]
		f.frame, f.hash = p.templates[i].fill(h.seq+uint64(i)+1, epoch, prev)
		prev = f.hash
	}
	p.guess = g
}

// remember records the head that request p, if it was committed as r, left.
func (s *Store) remember(p *prepared, r outcome) {
	if r.err != nil || len(r.entries) == 0 {
		return
	}
	last := r.entries[len(r.entries)-1]
	s.heads.put(p.key, head{seq: last.Seq, hash: last.Hash, epoch: r.epoch})
}
