package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
)

// textStopped is the status text of a task marked failed because the turn running it
// stopped with its instance (Recover, and a turn that finds one on beginning: planBegin).
const textStopped = "the gateway stopped during this turn; send the message again"

// stoppedEntry is the FAILED status that settles task taskID, left running by a turn that
// stopped with its instance.
func stoppedEntry(taskID string) ledger.Entry {
	return ledger.Entry{
		TaskID: taskID, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel,
		Actor: "gateway", State: string(a2a.StateFailed), MessageID: uuid.NewString(),
		Parts: []ledger.Part{{Kind: ledger.PartText, Text: textStopped}},
	}
}

// Recover marks tasks that were running when the gateway last stopped as FAILED, so that
// no task stays "working" forever, and returns how many it marked. Call it before serving.
// It reads the ledger's running-task index (ledger.RunningTasks: the tasks started and
// not settled since), so its work is proportional to the tasks that were running, not to
// the ledger, and re-checks each task's own entries before marking it. Conversations are
// recovered side by side (their appends share commits); an error of one conversation
// stops that conversation only, and the errors are returned joined.
//
// With Config.SharedStore another instance may be running the task right now: Recover
// then marks a task only when its context lease is free (no instance runs a turn there),
// and leaves alone a task whose lease is held. It never takes the lease itself, so that it
// never makes a live, idle context busy (a send arriving meanwhile is admitted): it only
// looks (Locker.Holder), and its mark is a compare-and-bump on the epoch it read, which a
// turn begun since fences off (recovery.task says why that is safe). A stopped instance's
// lease stays held until its TTL expires; the Runner's sweep (Config.LeaseTTL) recovers
// those tasks later, and a turn that takes the lease first settles them as it begins
// (planBegin). Its errors are the ledger's and the Locker's.
func (r *Runner) Recover(ctx context.Context) (int, error) { return r.recovery.run(ctx) }

// recovery marks as FAILED the tasks that turns stopped with their instance left running:
// Recover, and the sweep over a shared store (Config.LeaseTTL).
type recovery struct {
	store  recoveryStore
	locks  Locker // Holder only: recovery never takes a lease
	shared bool   // Config.SharedStore
	log    *slog.Logger
}

// run is Recover.
func (rc *recovery) run(ctx context.Context) (int, error) {
	tasks, err := rc.store.RunningTasks(ctx)
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
	eachConcurrently(keys, func(key string) {
		for _, rt := range byConv[key] {
			marked, err := rc.task(ctx, rt)
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
func eachConcurrently(keys []string, fn func(key string)) {
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

// task marks task rt failed when it is still running (see Recover); it reports
// whether it did.
//
// With a shared store it never takes the context's lease; why its mark cannot fail a
// live turn: (1) it reads the task running at epoch e, (2) finds the lease free, (3)
// reads the task again, still running and still at epoch e, (4) appends the FAILED status
// with BeginTurn and Epoch e, a compare-and-bump that the ledger refuses (ErrFenced) if
// any turn began (bumped the epoch) since (1). A live turn holds its context's lease from
// before its first append until after the append that settles its task (turnRun.finish
// stores the end, then hands the lease over). So the turn T that left the task running
// at (1) was no longer live at (2), or the lease would have been held: T had either
// settled the task, which needs no new epoch, so (3) sees it and nothing is marked; or T
// stopped with its instance; or T lost its lease (Redis emptied, or T stalled past the
// TTL) and is being canceled: its appends carry epoch e, so one made after (4) is fenced,
// and one made between (3) and (4) is followed by the mark, as when Recover took the
// lease (a lease no longer protects a holder that lost it: DESIGN L-2). A new turn N
// that takes the lease after (2):
//   - if N's first append (BeginTurn) commits before (4), the epoch has moved and (4) is
//     refused: N itself settles the task as it begins (planBegin);
//   - if it has not yet (N took the lease but has not appended its message), (4) marks
//     the task of T, which is not N's turn, and N's BeginTurn follows in the next epoch:
//     N runs unharmed. (If N continues that very task, N's message makes it working
//     again after the mark.)
//
// A held lease is left alone: a turn runs there, here or elsewhere, or a stopped one's
// lease has not expired yet (the sweep comes back; a turn taking the lease settles it).
func (rc *recovery) task(ctx context.Context, rt ledger.RunningTask) (bool, error) {
	conv, running, err := rc.taskRunning(ctx, rt.TaskID)
	if err != nil || !running {
		return false, err
	}
	if rc.shared {
		holder, err := rc.locks.Holder(ctx, contextid.Key(conv.Owner, conv.ContextID))
		if err != nil || holder != "" {
			return false, err
		}
		again, running, err := rc.taskRunning(ctx, rt.TaskID)
		if err != nil || !running || again.Epoch != conv.Epoch {
			return false, err // ended, or a turn began since the first read: it is that turn's to settle
		}
	}
	// Compare-and-bump on the epoch read first: of several instances recovering one shared
	// ledger together, one wins; the others (and a turn begun since) are fenced off.
	_, err = rc.store.Append(ctx, ledger.AppendRequest{Owner: conv.Owner, ContextID: conv.ContextID, BeginTurn: true, Epoch: conv.Epoch,
		Entries: []ledger.Entry{stoppedEntry(rt.TaskID)}})
	if errors.Is(err, ledger.ErrFenced) {
		return false, nil
	}
	return err == nil, err
}

// taskRunning reads taskID's conversation and reports whether the ledger shows the task
// neither ended nor interrupted. A quarantined (damaged) conversation is not running: the
// ledger logged it.
func (rc *recovery) taskRunning(ctx context.Context, taskID string) (ledger.Conversation, bool, error) {
	conv, entries, err := rc.store.TaskEntries(ctx, taskID)
	if errors.Is(err, ledger.ErrQuarantined) || errors.Is(err, ledger.ErrNotFound) {
		return conv, false, nil
	}
	if err != nil {
		return conv, false, err
	}
	st := foldTask(conv, taskID, entries).Status.State
	return conv, !st.Terminal() && !st.Interrupted(), nil
}

// sweep runs Recover every interval until ctx is canceled (Close cancels the Runner's
// base), so that the tasks of an instance that stopped are marked failed once its leases
// expire. It closes done when it returns.
func (rc *recovery) sweep(ctx context.Context, interval time.Duration, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := rc.run(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			rc.log.WarnContext(ctx, "recovery sweep failed; it runs again", "err", err)
		case n > 0:
			rc.log.WarnContext(ctx, "marked turns of a stopped instance as failed", "tasks", n)
		}
	}
}
