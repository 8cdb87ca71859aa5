package ledger

import "github.com/a2a-gateway/gateway/internal/genmap"

// checkedMax is how many conversation keys one generation of the Store's checkedSet holds:
// with two generations, at most 2 × 65,536 keys (18 MiB of heap measured at that cap).
const checkedMax = genmap.DefaultMax

// checkedSet is the conversations checkOnce passed, so that a conversation is checked
// before its first use, not at every use. It is bounded, so that a gateway that meets
// millions of conversations does not keep a key for each (it kept one per conversation
// used since Open, ~230 bytes each, in a sync.Map): two generations of at most Max keys;
// when the newer one is full, the older one is dropped and a new one begun. A key found in
// the older generation moves to the newer one, so a conversation in use stays checked; one
// left unused through a whole generation is checked again at its next use, which costs a
// check and weakens nothing. The zero value is empty with checkedMax keys per generation
// (tests lower Max).
type checkedSet = genmap.Map[struct{}]
