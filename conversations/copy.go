package conversations

import (
	"context"
	"errors"
	"fmt"

	"github.com/a2a-gateway/gateway/ledger"
)

// copyBatch is the most entries one copying append carries.
const copyBatch = 200

// CopyLedger copies every conversation of src into dst, entry for entry with the same
// hashes (`gateway ledger copy`: a bbolt ledger into PostgreSQL, or back). It verifies
// each source chain before copying it and each copied chain after. A conversation dst
// already holds whole is verified and skipped; one it holds a prefix of is continued;
// one whose entries differ from the source's is an error. copied, when not nil, is
// called after each conversation is copied (or found copied). It returns how many
// conversations were copied or found copied, also on error (those before the failing
// one). Errors name the conversation and wrap the ledger's error (the source's Verify
// as "source: …", the copy's as "the copy: …").
func CopyLedger(ctx context.Context, src, dst Ledger, copied func(ledger.Conversation)) (int, error) {
	convs, err := src.List(ctx, ledger.ListOptions{})
	if err != nil {
		return 0, err
	}
	for i, c := range convs {
		if err := copyConversation(ctx, src, dst, c); err != nil {
			return i, fmt.Errorf("conversation %q (peer %q): %w", c.ContextID, c.Owner, err)
		}
		if copied != nil {
			copied(c)
		}
	}
	return len(convs), nil
}

// copyConversation verifies c in src, appends to dst the entries dst lacks (dst must hold a
// prefix of c: the same hash at its last seq), checks every appended entry's hash against
// the source's and verifies the copy.
func copyConversation(ctx context.Context, src, dst Ledger, c ledger.Conversation) error {
	if err := src.Verify(ctx, c.Owner, c.ContextID); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	have, epoch, err := copiedPrefix(ctx, src, dst, c)
	if err != nil {
		return err
	}
	for have < c.LastSeq {
		es, err := src.Range(ctx, c.Owner, c.ContextID, have, copyBatch)
		if err != nil {
			return err
		}
		if err := src.Inflate(ctx, es); err != nil {
			return err
		}
		n, err := appendRun(ctx, dst, es, epoch)
		if err != nil {
			return err
		}
		have, epoch = es[n-1].Seq, es[n-1].Epoch
	}
	if err := dst.Verify(ctx, c.Owner, c.ContextID); err != nil {
		return fmt.Errorf("the copy: %w", err)
	}
	return nil
}

// copiedPrefix returns how far dst already holds c (0 for nothing) and the epoch there.
func copiedPrefix(ctx context.Context, src, dst Ledger, c ledger.Conversation) (seq, epoch uint64, err error) {
	d, err := dst.Conversation(ctx, c.Owner, c.ContextID)
	if errors.Is(err, ledger.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if d.LastSeq > c.LastSeq {
		return 0, 0, fmt.Errorf("the target holds %d entries, the source %d", d.LastSeq, c.LastSeq)
	}
	if d.LastSeq == 0 {
		return 0, d.Epoch, nil
	}
	es, err := src.Range(ctx, c.Owner, c.ContextID, d.LastSeq-1, 1)
	if err != nil {
		return 0, 0, err
	}
	last, err := dst.Last(ctx, c.Owner, c.ContextID, 1, nil)
	if err != nil {
		return 0, 0, err
	}
	if len(es) != 1 || len(last) != 1 || es[0].Hash != last[0].Hash {
		return 0, 0, fmt.Errorf("the target's entry %d differs from the source's: not a copy of it", d.LastSeq)
	}
	return d.LastSeq, d.Epoch, nil
}

// appendRun appends the leading entries of es that share one epoch (BeginTurn when it is
// the next epoch after epoch) and returns how many. Each stored entry must hash as in the
// source.
func appendRun(ctx context.Context, dst Ledger, es []ledger.Entry, epoch uint64) (int, error) {
	first := es[0]
	n := 1
	for n < len(es) && es[n].Epoch == first.Epoch {
		n++
	}
	req := ledger.AppendRequest{Owner: first.Owner, ContextID: first.ContextID, Entries: make([]ledger.Entry, n)}
	switch first.Epoch {
	case epoch:
	case epoch + 1:
		req.BeginTurn = true
	default:
		return 0, fmt.Errorf("seq %d: epoch %d follows epoch %d", first.Seq, first.Epoch, epoch)
	}
	for i, e := range es[:n] {
		e.Seq, e.Epoch, e.PrevHash, e.Hash = 0, 0, "", ""
		for j := range e.Parts {
			if e.Parts[j].ArtifactRef != "" { // inflated: the target moves it again
				e.Parts[j].ArtifactRef, e.Parts[j].Size = "", 0
			}
		}
		req.Entries[i] = e
	}
	res, err := dst.Append(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("seq %d: %w", first.Seq, err)
	}
	for i, e := range res.Entries {
		if e.Seq != es[i].Seq || e.Hash != es[i].Hash {
			return 0, fmt.Errorf("seq %d copied as seq %d with hash %s, the source's is %s", es[i].Seq, e.Seq, e.Hash, es[i].Hash)
		}
	}
	return n, nil
}
