package turn

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
)

// taskEntries reads a task of peer from the ledger: a *taskNotFoundError when it does not
// exist or is another peer's.
func (r *Runner) taskEntries(ctx context.Context, peer, taskID string) (ledger.Conversation, []ledger.Entry, error) {
	conv, entries, err := r.tasks.TaskEntries(ctx, taskID)
	if errors.Is(err, ledger.ErrNotFound) || othersDamage(err, peer) || (err == nil && conv.Owner != peer) {
		return ledger.Conversation{}, nil, &taskNotFoundError{TaskID: taskID}
	}
	if err != nil {
		return ledger.Conversation{}, nil, fmt.Errorf("load task: %w", err)
	}
	return conv, entries, nil
}

// loadTask folds a task of peer from the ledger; another peer's task is "not found" (a
// *taskNotFoundError).
func (r *Runner) loadTask(ctx context.Context, peer, taskID string, historyLength *int) (*a2a.Task, error) {
	conv, entries, err := r.taskEntries(ctx, peer, taskID)
	if err != nil {
		return nil, err
	}
	if err := r.inflate(ctx, entries); err != nil {
		return nil, err
	}
	t := foldTask(conv, taskID, entries)
	applyHistoryLength(&t, historyLength)
	return &t, nil
}

func (r *Runner) inflate(ctx context.Context, entries []ledger.Entry) error {
	for i := range entries {
		for j := range entries[i].Parts {
			if entries[i].Parts[j].ArtifactRef != "" {
				if err := r.tasks.Inflate(ctx, entries); err != nil {
					return fmt.Errorf("inflate artifacts: %w", err)
				}
				return nil
			}
		}
	}
	return nil
}

// GetTask implements a2a.Handler. Its errors are protocol errors (see protocolError).
func (r *Runner) GetTask(ctx context.Context, p *a2a.GetTaskParams) (_ *a2a.Task, err error) {
	defer func() { err = protocolError(err) }()
	peer, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	return r.loadTask(ctx, peer, p.ID, p.HistoryLength)
}

// ListTasks implements a2a.Handler: the caller's tasks, newest status first, optionally of
// one context; the page token is a cursor (pagetoken.go). Its errors are protocol errors
// (see protocolError).
func (r *Runner) ListTasks(ctx context.Context, p *a2a.ListTasksParams) (_ *a2a.ListTasksResult, err error) {
	defer func() { err = protocolError(err) }()
	peer, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	after, err := decodePageToken(p)
	if err != nil {
		return nil, err
	}
	convs, err := r.taskContexts(ctx, peer, p.ContextID)
	if err != nil {
		return nil, err
	}
	tasks, err := r.listTasks(ctx, peer, convs, p)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(tasks, func(a, b a2a.Task) int { return compareListed(cursorOf(&a), cursorOf(&b)) })
	size := p.PageSize
	if size <= 0 {
		size = defaultPageSize
	}
	page, next := pageOf(tasks, after, size)
	res := &a2a.ListTasksResult{Tasks: page, TotalSize: len(tasks), PageSize: size}
	if next != nil {
		res.NextPageToken = encodePageToken(*next, p)
	}
	return res, nil
}

// taskContexts are the contexts ListTasks reads: contextID, or all of peer's.
func (r *Runner) taskContexts(ctx context.Context, peer, contextID string) ([]string, error) {
	if contextID != "" {
		if err := contextid.Validate(contextID); err != nil {
			return nil, &paramError{Field: "contextId", Err: err}
		}
		return []string{contextID}, nil
	}
	all, err := r.tasks.List(ctx, ledger.ListOptions{Owner: peer})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	convs := make([]string, 0, len(all))
	for _, c := range all {
		convs = append(convs, c.ContextID)
	}
	return convs, nil
}

// listTasks folds peer's tasks in the contexts convs that pass p's filters.
func (r *Runner) listTasks(ctx context.Context, peer string, convs []string, p *a2a.ListTasksParams) ([]a2a.Task, error) {
	var tasks []a2a.Task
	for _, cid := range convs {
		ids, err := r.tasks.TaskIDs(ctx, peer, cid)
		if errors.Is(err, ledger.ErrNotFound) || (errors.Is(err, ledger.ErrQuarantined) && p.ContextID == "") {
			continue // gone, or damaged: listing all of the peer's tasks skips it (its contextId alone says so)
		}
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		for _, id := range ids {
			t, err := r.loadTask(ctx, peer, id, p.HistoryLength)
			if err != nil {
				return nil, err
			}
			if p.Status != "" && t.Status.State != p.Status {
				continue
			}
			if !p.StatusTimestampAfter.IsZero() && t.Status.Timestamp.Before(p.StatusTimestampAfter) {
				continue // kept at or after it (a2a.proto: "greater than or equal to this value")
			}
			if !p.IncludeArtifacts {
				t.Artifacts = nil
			}
			tasks = append(tasks, *t)
		}
	}
	return tasks, nil
}

// CancelTask implements a2a.Handler. Canceling a canceled task returns it again
// (idempotent); any other terminal task is not cancelable. Its errors are protocol errors
// (see protocolError).
func (r *Runner) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (_ *a2a.Task, err error) {
	defer func() { err = protocolError(err) }()
	peer, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := r.loadTask(ctx, peer, p.ID, nil)
	if err != nil {
		return nil, err
	}
	switch st := t.Status.State; {
	case st == a2a.StateCanceled:
		return t, nil
	case st.Terminal():
		return nil, a2a.Errorf(a2a.ErrTaskNotCancelable, "task %s is already %s", a2a.EchoQuote(p.ID), st)
	}
	r.mu.Lock()
	lt := r.live[p.ID]
	r.mu.Unlock()
	if lt != nil {
		lt.cancel(errCanceledByPeer)
		select {
		case <-lt.finished:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return r.loadTask(ctx, peer, p.ID, nil)
	}
	// Not running here: parked (input-required) or left over. Take the lease so no turn
	// runs meanwhile, and record the cancellation in a new epoch.
	lease, err := r.leases.acquire(ctx, contextid.Key(peer, t.ContextID), p.ID)
	if err != nil {
		return nil, r.refuse(ctx, peer, t.ContextID, err, func(holder string) ledger.Entry {
			return cancelAuditEntry(peer, p.ID, holder)
		})
	}
	defer r.leases.release(ctx, lease)
	_, err = r.store.Append(ctx, ledger.AppendRequest{Owner: peer, ContextID: t.ContextID, BeginTurn: true, Entries: []ledger.Entry{{
		TaskID: p.ID, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel,
		Actor: peer, State: string(a2a.StateCanceled), MessageID: uuid.NewString(),
	}}})
	if err != nil {
		return nil, fmt.Errorf("record cancel: %w", err)
	}
	r.cancelUpstream(ctx, p.ID)
	return r.loadTask(ctx, peer, p.ID, nil)
}

// cancelUpstream cancels, best effort, the upstream task that task taskID's last reply
// left waiting for input (a relaying agent's, metaUpstreamTask), once the task itself was
// canceled while parked. It waits at most FinalizeTimeout, even if the caller leaves.
func (r *Runner) cancelUpstream(ctx context.Context, taskID string) {
	c, ok := r.agent.(agent.UpstreamCanceler)
	if !ok {
		return
	}
	_, entries, err := r.tasks.TaskEntries(ctx, taskID)
	if err != nil {
		return
	}
	upstream := ""
	for i := range entries {
		if entries[i].Kind == ledger.KindAgentReply {
			upstream = metaString(entries[i].Metadata, metaUpstreamTask)
		}
	}
	if upstream == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.FinalizeTimeout)
	defer cancel()
	if err := c.CancelUpstream(cctx, upstream); err != nil {
		r.log.WarnContext(ctx, "the canceled task's upstream task was not canceled; it keeps waiting for input upstream",
			"task_id", taskID, "upstream_task_id", upstream, "err", err)
	}
}
