package postgres

import "github.com/a2a-gateway/gateway/ledger"

// CommitBatch commits reqs as one batch of the group committer (as if they had been
// queued together) and returns each request's error. Tests only.
func CommitBatch(s *Store, reqs []ledger.AppendRequest) ([]error, error) {
	batch := make([]*pending, len(reqs))
	for i, r := range reqs {
		p, err := ledger.PrepareAppend(r, s.opts.Now(), s.opts.LargePartBytes)
		if err != nil {
			return nil, err
		}
		batch[i] = &pending{p: p, done: make(chan outcome, 1)}
	}
	s.commitBatch(batch)
	errs := make([]error, len(batch))
	for i, w := range batch {
		errs[i] = (<-w.done).err
	}
	return errs, nil
}

// CommitAlone commits req in a transaction of its own, as the group committer does after a
// batch kept failing, and returns its error. Tests only.
func CommitAlone(s *Store, req ledger.AppendRequest) error {
	p, err := ledger.PrepareAppend(req, s.opts.Now(), s.opts.LargePartBytes)
	if err != nil {
		return err
	}
	return s.commitAlone(p).err
}
