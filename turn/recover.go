package turn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// recoverHolder is the lease holder Recover names while it marks a task failed.
const recoverHolder = "gateway-recover"

// Recover marks tasks that were running when the gateway last stopped as FAILED, so that
// no task stays "working" forever, and returns how many it marked. Call it before serving.
// It reads the ledger's running-task index (ledger.RunningTasks: the tasks started and
// not settled since), so its work is proportional to the tasks that were running, not to
// the ledger, and re-checks each task's own entries before marking it. Conversations are
// recovered side by side (their appends share commits); an error of one conversation
// stops that conversation only, and the errors are returned joined.
//
// With Config.SharedStore another instance may be running the task right now: Recover
// then marks a task only while it holds the task's context lease (free means no instance
// runs a turn there), and leaves alone a task whose lease is held. A stopped instance's
// lease stays held until its TTL expires; the Runner's sweep (Config.LeaseTTL) recovers
// those tasks later. Its errors are the ledger's and the Locker's (other than held).
func (r *Runner) Recover(ctx context.Context) (int, error) {
	tasks, err := r.led.RunningTasks(ctx)
	if err != nil {
		return 0, fmt.Errorf("recover: %w", err)
	}
	// One conversation's tasks one after the other (each mark bumps its epoch, which
	// would fence a second mark made on the same epoch); conversations side by side, so
	// that their appends share group commits.
	var keys []string
	byConv := map[string][]ledger.RunningTask{}
	for _, rt := range tasks {
		if byConv[rt.Key] == nil {
			keys = append(keys, rt.Key)
		}
		byConv[rt.Key] = append(byConv[rt.Key], rt)
	}
	var (
		mu   sync.Mutex
		n    int
		errs []error
	)
	r.eachConcurrently(keys, func(key string) {
		for _, rt := range byConv[key] {
			marked, err := r.recoverTask(ctx, rt)
			mu.Lock()
			if err != nil {
				errs = append(errs, fmt.Errorf("recover task %s: %w", rt.TaskID, err))
			} else if marked {
				n++
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	return n, errors.Join(errs...)
}

// recoverWorkers bounds how many conversations Recover works on at once.
const recoverWorkers = 16

// eachConcurrently calls fn with every key, on at most recoverWorkers goroutines, and
// returns when every call has returned.
func (r *Runner) eachConcurrently(keys []string, fn func(key string)) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(recoverWorkers, len(keys)) {
		wg.Go(func() {
			for k := range work {
				fn(k)
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
}

// recoverTask marks task rt failed when it is still running (see Recover); it reports
// whether it did.
func (r *Runner) recoverTask(ctx context.Context, rt ledger.RunningTask) (bool, error) {
	conv, running, err := r.taskRunning(ctx, rt.TaskID)
	if err != nil || !running {
		return false, err
	}
	if r.cfg.SharedStore {
		lease, err := r.locks.Acquire(ctx, contextid.Key(conv.Owner, conv.ContextID), recoverHolder)
		if errors.Is(err, locking.ErrHeld) {
			return false, nil // a turn runs there (here or elsewhere), or a stopped one's lease has not expired yet
		}
		if err != nil {
			return false, err
		}
		defer r.releaseLease(ctx, lease)
		// The task may have ended between the first read and the lease.
		if _, running, err = r.taskRunning(ctx, rt.TaskID); err != nil || !running {
			return false, err
		}
	}
	// Compare-and-bump on the epoch read: of several instances recovering one shared
	// ledger together, one wins; the others (and a turn begun since) are fenced off.
	_, err = r.led.Append(ctx, ledger.AppendRequest{Owner: conv.Owner, ContextID: conv.ContextID, BeginTurn: true, Epoch: conv.Epoch, Entries: []ledger.Entry{{
		TaskID: rt.TaskID, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel,
		Actor: "gateway", State: string(a2a.StateFailed), MessageID: uuid.NewString(),
		Parts: []ledger.Part{{Kind: ledger.PartText, Text: "the gateway stopped during this turn; send the message again"}},
	}}})
	if errors.Is(err, ledger.ErrFenced) {
		return false, nil
	}
	return err == nil, err
}

// taskRunning reads taskID's conversation and reports whether the ledger shows the task
// neither ended nor interrupted. A quarantined (damaged) conversation is not running: the
// ledger logged it.
func (r *Runner) taskRunning(ctx context.Context, taskID string) (ledger.Conversation, bool, error) {
	conv, entries, err := r.led.TaskEntries(ctx, taskID)
	if errors.Is(err, ledger.ErrQuarantined) || errors.Is(err, ledger.ErrNotFound) {
		return conv, false, nil
	}
	if err != nil {
		return conv, false, err
	}
	st := foldTask(conv, taskID, entries).Status.State
	return conv, !st.Terminal() && !st.Interrupted(), nil
}

// sweepRecover runs Recover every interval until r.base is canceled (Close), so that the
// tasks of an instance that stopped are marked failed once its leases expire. It closes
// r.sweepDone when it returns.
func (r *Runner) sweepRecover(interval time.Duration) {
	defer close(r.sweepDone)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-r.base.Done():
			return
		case <-tick.C:
		}
		n, err := r.Recover(r.base)
		switch {
		case err != nil && r.base.Err() == nil:
			r.log.WarnContext(r.base, "recovery sweep failed; it runs again", "err", err)
		case n > 0:
			r.log.WarnContext(r.base, "marked turns of a stopped instance as failed", "tasks", n)
		}
	}
}
