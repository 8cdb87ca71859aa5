package ledger

// writeFault returns the failure Options.WriteFault injects, if any.
func (s *Store) writeFault() error {
	if s.opts.WriteFault == nil {
		return nil
	}
	return s.opts.WriteFault()
}
