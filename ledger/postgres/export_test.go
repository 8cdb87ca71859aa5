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
