package ledger

import "sync"

// checkedMax is how many conversation keys one generation of the Store's checkedSet holds:
// with two generations, at most 2 × 65,536 keys (18 MiB of heap measured at that cap).
const checkedMax = 1 << 16

// checkedSet is the conversations checkOnce passed, so that a conversation is checked
// before its first use, not at every use. It is bounded, so that a gateway that meets
// millions of conversations does not keep a key for each (it kept one per conversation
// used since Open, ~230 bytes each, in a sync.Map): two generations of at most max keys;
// when the newer one is full, the older one is dropped and a new one begun. A key found in
// the older generation moves to the newer one, so a conversation in use stays checked; one
// left unused through a whole generation is checked again at its next use, which costs a
// check and weakens nothing. The zero value is empty with max checkedMax.
type checkedSet struct {
	mu       sync.Mutex
	cur, old map[string]struct{}
	max      int // 0: checkedMax (tests lower it)
}

// has reports whether key passed the check and is still remembered.
func (c *checkedSet) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cur[key]; ok {
		return true
	}
	if _, ok := c.old[key]; ok {
		c.addLocked(key)
		return true
	}
	return false
}

// add remembers that key passed the check.
func (c *checkedSet) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(key)
}

func (c *checkedSet) addLocked(key string) {
	limit := c.max
	if limit <= 0 {
		limit = checkedMax
	}
	if len(c.cur) >= limit {
		c.old, c.cur = c.cur, nil
	}
	if c.cur == nil {
		c.cur = make(map[string]struct{})
	}
	c.cur[key] = struct{}{}
}

// len returns how many keys the set holds (both generations; a moved key counts twice
// until the older generation is dropped).
func (c *checkedSet) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}
