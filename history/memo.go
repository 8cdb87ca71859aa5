package history

// FilterMemo remembers [Filter]'s results for a caller that renders much the same texts
// again and again (the same conversation's history, turn after turn): [Render] given one
// in Options.Memo looks each text up before filtering it. Filter is a pure function of
// its input, so a rendering with a memo is the rendering without one, byte for byte.
//
// It keeps two generations: each Render with the memo begins a new one, and a text not
// rendered in the previous generation or this one is forgotten, so it holds the texts of
// at most two renderings. The zero value is empty and ready. It is not safe for
// concurrent use.
type FilterMemo struct {
	cur, old map[string]string
}

// next begins a generation of n texts (see FilterMemo).
func (m *FilterMemo) next(n int) {
	m.old, m.cur = m.cur, make(map[string]string, n)
}

// Filter returns Filter(text), remembered in the current generation.
func (m *FilterMemo) Filter(text string) string {
	if m.cur == nil {
		m.cur = make(map[string]string)
	}
	if s, ok := m.cur[text]; ok {
		return s
	}
	s, ok := m.old[text]
	if !ok {
		s = Filter(text)
	}
	m.cur[text] = s
	return s
}
