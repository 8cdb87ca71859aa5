package conversations

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/a2a-gateway/gateway/prompt"
)

// exportPage is how many entries Export reads per ledger call.
const exportPage = 500

// Export writes every entry of the conversation ref to w as JSON Lines, oldest first.
// Nothing is written before ref is found. Errors: those of [Service.Find]; the ledger's;
// w's.
func (s *Service) Export(ctx context.Context, ref Ref, w io.Writer) error {
	c, err := s.Find(ctx, ref)
	if err != nil {
		return err
	}
	var after uint64
	for {
		entries, err := s.led.Range(ctx, c.Owner, c.ContextID, after, exportPage)
		if err != nil {
			return err
		}
		for i := range entries {
			b, err := json.Marshal(&entries[i])
			if err != nil {
				return err
			}
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
			after = entries[i].Seq
		}
		if len(entries) < exportPage {
			return nil
		}
	}
}

// VerifyProblem is one broken chain found by Verify.
type VerifyProblem struct {
	ContextID string `json:"contextId"`
	Peer      string `json:"peer"`
	Seq       uint64 `json:"seq"`
	Reason    string `json:"reason"`
}

// VerifyReport is the outcome of a Verify run.
type VerifyReport struct {
	Checked  int             `json:"checked"`
	OK       bool            `json:"ok"`
	Problems []VerifyProblem `json:"problems,omitempty"`
}

// Verify checks the hash chain of the conversation ref, or of every conversation when
// ref.ContextID is "". Broken chains are reported in the report (OK false), not as an
// error. Errors: those of [Service.Find]; the ledger's other failures.
func (s *Service) Verify(ctx context.Context, ref Ref) (VerifyReport, error) {
	var err error
	rep := VerifyReport{}
	if ref.ContextID != "" {
		c, ferr := s.Find(ctx, ref)
		if ferr != nil {
			return rep, ferr
		}
		rep.Checked = 1
		err = s.led.Verify(ctx, c.Owner, c.ContextID)
	} else {
		rep.Checked, err = s.led.VerifyAll(ctx)
	}
	for _, e := range unjoin(err) {
		var ce *ledger.ChainError
		if !errors.As(e, &ce) {
			return rep, e
		}
		rep.Problems = append(rep.Problems, VerifyProblem{ContextID: ce.ContextID, Peer: ce.Owner, Seq: ce.Seq, Reason: ce.Reason})
	}
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

// unjoin splits an errors.Join result.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// ReplayResult is what the agent was given at one turn, rebuilt from the ledger.
type ReplayResult struct {
	ContextID string             `json:"contextId"`
	Peer      string             `json:"peer"`
	TaskID    string             `json:"taskId"`
	Text      string             `json:"text"`
	Prompt    string             `json:"prompt"`
	Request   projection.Request `json:"request"`
}

// Replay rebuilds what the agent was given at the turn whose message is at seq atSeq of
// the conversation ref (0: the latest turn; any seq inside a turn selects it), with the
// service's policy: the same code the turn runner uses (package prompt). Errors: those of
// [Service.Find]; a [*PastEndError] (naming the last seq) when atSeq is past the
// conversation's last entry; a [*NotFoundError] with Turn set when no turn is at or
// before atSeq; otherwise the ledger's or the projection's.
func (s *Service) Replay(ctx context.Context, ref Ref, atSeq uint64) (ReplayResult, error) {
	c, err := s.Find(ctx, ref)
	if err != nil {
		return ReplayResult{}, err
	}
	if atSeq > c.LastSeq {
		return ReplayResult{}, &PastEndError{ContextID: c.ContextID, Owner: c.Owner, AtSeq: atSeq, LastSeq: c.LastSeq}
	}
	t, err := prompt.Replay(ctx, s.led, s.cfg.Policy, c.Owner, c.ContextID, atSeq)
	if errors.Is(err, ledger.ErrNotFound) {
		return ReplayResult{}, &NotFoundError{ContextID: c.ContextID, Owner: ref.Owner, AtSeq: atSeq, Turn: true}
	}
	if err != nil {
		return ReplayResult{}, err
	}
	return ReplayResult{ContextID: c.ContextID, Peer: c.Owner, TaskID: t.TaskID, Text: t.Text, Prompt: t.Prompt, Request: t.Request}, nil
}
