package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
	"github.com/a2a-gateway/gateway/turn"
)

// convView is one conversation as operators see it: original ids, never storage keys.
type convView struct {
	ContextID    string    `json:"contextId"`
	Peer         string    `json:"peer"`
	Turns        int       `json:"turns"`
	Tasks        int       `json:"tasks"`
	Entries      int       `json:"entries"`
	LastSeq      uint64    `json:"lastSeq"`
	CreatedAt    time.Time `json:"createdAt"`
	LastActivity time.Time `json:"lastActivity"`
	RunningTask  string    `json:"runningTask,omitempty"`
}

// verifyProblem is one broken chain found by verify.
type verifyProblem struct {
	ContextID string `json:"contextId"`
	Peer      string `json:"peer"`
	Seq       uint64 `json:"seq"`
	Reason    string `json:"reason"`
}

// verifyReport is the outcome of a verify run.
type verifyReport struct {
	Checked  int             `json:"checked"`
	OK       bool            `json:"ok"`
	Problems []verifyProblem `json:"problems,omitempty"`
}

// showResult is a conversation with its entries.
type showResult struct {
	Conversation convView       `json:"conversation"`
	Entries      []ledger.Entry `json:"entries"`
}

// replayResult is what the agent was given at one turn, rebuilt from the ledger.
type replayResult struct {
	ContextID string             `json:"contextId"`
	Peer      string             `json:"peer"`
	TaskID    string             `json:"taskId"`
	Text      string             `json:"text"`
	Prompt    string             `json:"prompt"`
	Request   projection.Request `json:"request"`
}

// errNoConversation: no conversation has that contextId (for that peer).
var errNoConversation = errors.New("no such conversation")

// errAmbiguousContext: several peers have a conversation with that contextId, and no
// --peer says which one is meant.
var errAmbiguousContext = errors.New("ambiguous contextId")

// opsSource is where operator commands read: the running gateway's admin API, or the
// data dir when no gateway runs.
type opsSource interface {
	List(ctx context.Context, peer string, limit int) ([]convView, error)
	Show(ctx context.Context, contextID, peer string, limit int, all bool) (showResult, error)
	Export(ctx context.Context, contextID, peer string, w io.Writer) error
	Verify(ctx context.Context, contextID, peer string) (verifyReport, error)
	Replay(ctx context.Context, contextID, peer string, atSeq uint64) (replayResult, error)
}

// directSource reads a ledger in this process (the server's admin API and offline CLI).
type directSource struct {
	led     *ledger.Store
	running func(ctx context.Context, owner, contextID string) string // nil: nothing runs
	policy  projection.Policy                                         // for Replay
}

func (d directSource) view(ctx context.Context, c ledger.Conversation) convView {
	v := convView{ContextID: c.ContextID, Peer: c.Owner, Turns: c.Turns, Tasks: c.Tasks, Entries: c.Entries,
		LastSeq: c.LastSeq, CreatedAt: c.CreatedAt, LastActivity: c.LastActivity}
	if d.running != nil {
		v.RunningTask = d.running(ctx, c.Owner, c.ContextID)
	}
	return v
}

func (d directSource) List(ctx context.Context, peer string, limit int) ([]convView, error) {
	convs, err := d.led.List(ctx, ledger.ListOptions{Owner: peer, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]convView, 0, len(convs))
	for _, c := range convs {
		out = append(out, d.view(ctx, c))
	}
	return out, nil
}

// find resolves a contextId (and optional peer) to one conversation.
func (d directSource) find(ctx context.Context, contextID, peer string) (ledger.Conversation, error) {
	if peer != "" {
		c, err := d.led.Conversation(ctx, peer, contextID)
		if errors.Is(err, ledger.ErrNotFound) {
			return c, fmt.Errorf("%w: %q of peer %q", errNoConversation, contextID, peer)
		}
		return c, err
	}
	all, err := d.led.List(ctx, ledger.ListOptions{})
	if err != nil {
		return ledger.Conversation{}, err
	}
	var found []ledger.Conversation
	for _, c := range all {
		if c.ContextID == contextID {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return ledger.Conversation{}, fmt.Errorf("%w: %q", errNoConversation, contextID)
	case 1:
		return found[0], nil
	}
	peers := make([]string, len(found))
	for i, c := range found {
		peers[i] = c.Owner
	}
	return ledger.Conversation{}, fmt.Errorf("%w: %q is used by several peers (%s): choose one with --peer", errAmbiguousContext, contextID, strings.Join(peers, ", "))
}

// conversationOnly keeps what belongs to the conversation itself: no audit-only entries.
func conversationOnly(e *ledger.Entry) bool { return e.Visibility != ledger.VisibilityAudit }

func (d directSource) Show(ctx context.Context, contextID, peer string, limit int, all bool) (showResult, error) {
	c, err := d.find(ctx, contextID, peer)
	if err != nil {
		return showResult{}, err
	}
	keep := conversationOnly
	if all {
		keep = nil
	}
	n := limit
	if n <= 0 {
		n = int(c.LastSeq) + 1
	}
	entries, err := d.led.Last(ctx, c.Owner, c.ContextID, n, keep)
	if err != nil {
		return showResult{}, err
	}
	if entries == nil {
		entries = []ledger.Entry{}
	}
	return showResult{Conversation: d.view(ctx, c), Entries: entries}, nil
}

func (d directSource) Export(ctx context.Context, contextID, peer string, w io.Writer) error {
	c, err := d.find(ctx, contextID, peer)
	if err != nil {
		return err
	}
	const page = 500
	var after uint64
	for {
		entries, err := d.led.Range(ctx, c.Owner, c.ContextID, after, page)
		if err != nil {
			return err
		}
		for i := range entries {
			if err := writeJSONLine(w, &entries[i]); err != nil {
				return err
			}
			after = entries[i].Seq
		}
		if len(entries) < page {
			return nil
		}
	}
}

func (d directSource) Verify(ctx context.Context, contextID, peer string) (verifyReport, error) {
	var err error
	rep := verifyReport{}
	if contextID != "" {
		c, ferr := d.find(ctx, contextID, peer)
		if ferr != nil {
			return rep, ferr
		}
		rep.Checked = 1
		err = d.led.Verify(ctx, c.Owner, c.ContextID)
	} else {
		rep.Checked, err = d.led.VerifyAll(ctx)
	}
	for _, e := range unjoin(err) {
		var ce *ledger.ChainError
		if !errors.As(e, &ce) {
			return rep, e
		}
		rep.Problems = append(rep.Problems, verifyProblem{ContextID: ce.ContextID, Peer: ce.Owner, Seq: ce.Seq, Reason: ce.Reason})
	}
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

func (d directSource) Replay(ctx context.Context, contextID, peer string, atSeq uint64) (replayResult, error) {
	c, err := d.find(ctx, contextID, peer)
	if err != nil {
		return replayResult{}, err
	}
	t, err := turn.Replay(ctx, d.led, d.policy, c.Owner, c.ContextID, atSeq)
	if errors.Is(err, ledger.ErrNotFound) {
		return replayResult{}, fmt.Errorf("%w: %v", errNoConversation, err)
	}
	if err != nil {
		return replayResult{}, err
	}
	return replayResult{ContextID: c.ContextID, Peer: c.Owner, TaskID: t.TaskID, Text: t.Text, Prompt: t.Prompt, Request: t.Request}, nil
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
