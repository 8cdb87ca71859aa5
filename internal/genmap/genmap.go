// Package genmap is a bounded map that forgets keys left unused: two generations of at
// most Max keys each. When the newer generation is full, the older one is dropped and a
// new one begun; a key found in the older generation moves to the newer one, so a key in
// use stays, and one unused through a whole generation is forgotten. The ledger's
// memory of first-use checks and the turn's memory of each conversation's latest message
// use it: what it forgets costs a read, never correctness.
package genmap

import "sync"

// DefaultMax is the generation size of a Map whose Max is 0.
const DefaultMax = 1 << 16

// Map is safe for concurrent use. The zero value is empty, with DefaultMax keys per
// generation; set Max before the first use to change it.
type Map[V any] struct {
	Max int // keys per generation; 0: DefaultMax

	mu       sync.Mutex
	cur, old map[string]V
}

// Get returns the value of key, moving it to the newer generation.
func (m *Map[V]) Get(key string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.cur[key]; ok {
		return v, true
	}
	v, ok := m.old[key]
	if ok {
		m.putLocked(key, v)
	}
	return v, ok
}

// Has reports whether key is remembered (and moves it to the newer generation).
func (m *Map[V]) Has(key string) bool {
	_, ok := m.Get(key)
	return ok
}

// Put remembers v for key in the newer generation.
func (m *Map[V]) Put(key string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(key, v)
}

// DeleteIf forgets key when drop says so of its value.
func (m *Map[V]) DeleteIf(key string, drop func(V) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, gen := range []map[string]V{m.cur, m.old} {
		if v, ok := gen[key]; ok && drop(v) {
			delete(gen, key)
		}
	}
}

// Len returns how many keys both generations hold (a moved key counts twice until the
// older generation is dropped).
func (m *Map[V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cur) + len(m.old)
}

func (m *Map[V]) putLocked(key string, v V) {
	limit := m.Max
	if limit <= 0 {
		limit = DefaultMax
	}
	if len(m.cur) >= limit {
		m.old, m.cur = m.cur, nil
	}
	if m.cur == nil {
		m.cur = make(map[string]V)
	}
	m.cur[key] = v
}
