package turn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/locking"
)

// streamTurn sends text on contextID as a streaming send and reads the stream to its end,
// checking that the last event is the task's final status.
func streamTurn(ctx context.Context, r *Runner, contextID, text string) error {
	s, err := r.SendStreamingMessage(ctx, &a2a.SendParams{Message: a2a.Message{
		MessageID: "m-" + text, ContextID: contextID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)},
	}})
	if err != nil {
		return err
	}
	defer s.Close()
	var last a2a.TaskState
	for {
		ev, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		if ev.Status != nil {
			last = ev.Status.Status.State
		}
	}
	if last != a2a.StateCompleted {
		return fmt.Errorf("stream ended in state %q, want completed", last)
	}
	return nil
}

// TestNextTurnAfterTerminalEventIsNotBusy is issue #15 item 1: a client that has read a
// turn's final status (on a stream, or as a blocking send's answer) sends the next
// message at once, and is never refused with CONTEXT_BUSY for the turn that ended.
// Before the fix the final status was published before the lease was released.
func TestNextTurnAfterTerminalEventIsNotBusy(t *testing.T) {
	t.Parallel()
	const rounds = 500
	// Watched, so the reply is streamed as REPLY_CHUNK entries too.
	r, _ := newRunnerWith(t, Config{}, locking.NewLocal(), agent.Echo{})
	ctx := localCtx(t)
	busy, firstBusy := 0, error(nil)
	for i := range rounds {
		if err := streamTurn(ctx, r, "next-turn", fmt.Sprintf("stream %d", i)); err != nil {
			if !errors.Is(err, a2a.ErrContextBusy) {
				t.Fatalf("round %d: streaming send: %v", i, err)
			}
			busy, firstBusy = busy+1, cmpFirst(firstBusy, err)
			continue
		}
		// The follow-up at once: a blocking send on even rounds, a stream on odd ones.
		var err error
		if i%2 == 0 {
			var res a2a.SendResult
			res, err = send(ctx, r, "next-turn", "", fmt.Sprintf("send %d", i))
			if err == nil && res.Task.Status.State != a2a.StateCompleted {
				t.Fatalf("round %d: blocking send ended %q", i, res.Task.Status.State)
			}
		} else {
			err = streamTurn(ctx, r, "next-turn", fmt.Sprintf("again %d", i))
		}
		switch {
		case errors.Is(err, a2a.ErrContextBusy):
			busy, firstBusy = busy+1, cmpFirst(firstBusy, err)
		case err != nil:
			t.Fatalf("round %d: follow-up: %v", i, err)
		}
	}
	t.Logf("%d stream-then-send rounds on one context: %d CONTEXT_BUSY", rounds, busy)
	if busy != 0 {
		t.Fatalf("%d of %d rounds refused with CONTEXT_BUSY (first: %v), want 0", busy, rounds, firstBusy)
	}
}

func cmpFirst(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// TestNextTurnAfterPolledEndIsNotBusy: a client that polls GetTask until the task is
// terminal, then sends at once, is not refused either: the ledger shows the end as soon
// as it is committed, before the lease is given up, so a send in that window waits for
// the handover instead of being refused.
func TestNextTurnAfterPolledEndIsNotBusy(t *testing.T) {
	t.Parallel()
	const rounds = 300
	r, _ := newRunnerWith(t, Config{}, locking.NewLocal(), agent.Echo{})
	ctx := localCtx(t)
	busy, last := 0, ""
	for i := range rounds {
		res, err := r.SendMessage(ctx, &a2a.SendParams{
			Message: a2a.Message{MessageID: fmt.Sprintf("poll-%d", i), ContextID: "polled", Role: a2a.RoleUser,
				Parts: []a2a.Part{a2a.TextPart(fmt.Sprintf("poll %d", i))}},
			Config: a2a.SendConfig{ReturnImmediately: true},
		})
		switch {
		case errors.Is(err, a2a.ErrContextBusy):
			if busy++; busy == 1 {
				t.Logf("round %d: %v (after %s)", i, err, last)
			}
			waitIdle(t, r) // count the window once, not the rounds that would spin in it
			continue
		case err != nil:
			t.Fatalf("round %d: send: %v", i, err)
		}
		last = res.Task.ID
		for {
			task, err := r.GetTask(ctx, &a2a.GetTaskParams{ID: res.Task.ID})
			if err != nil {
				t.Fatalf("round %d: GetTask: %v", i, err)
			}
			if task.Status.State.Terminal() {
				break
			}
			runtime.Gosched()
		}
	}
	t.Logf("%d poll-then-send rounds on one context: %d CONTEXT_BUSY", rounds, busy)
	if busy != 0 {
		t.Fatalf("%d of %d rounds refused with CONTEXT_BUSY, want 0", busy, rounds)
	}
}

// TestSendAfterHolderLeftIsNotBusy: a send whose Acquire met the lease of a turn that
// then ended, handed the lease over and left before the send looked for that handover
// (a sender preempted between the two, as under make test-load) tries the lease again
// and is admitted instead of refused with CONTEXT_BUSY. staleHeldLocker makes the
// preemption happen every time.
func TestSendAfterHolderLeftIsNotBusy(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ag := funcAgent(func(ctx context.Context, tu agent.Turn, emit agent.Emit) (agent.Result, error) {
		if tu.Text == "first" {
			select {
			case <-release:
			case <-ctx.Done():
				return agent.Result{}, ctx.Err()
			}
		}
		return agent.Result{}, emit("reply to " + tu.Text)
	})
	locks := &staleHeldLocker{Local: locking.NewLocal(), heldSeen: make(chan struct{}, 1)}
	r, _ := newRunnerWith(t, Config{}, locks, ag)
	locks.r = r
	locks.armed.Store(true)
	ctx := localCtx(t)
	first, err := r.SendMessage(ctx, &a2a.SendParams{
		Message: a2a.Message{MessageID: "m-first", ContextID: "left", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("first")}},
		Config:  a2a.SendConfig{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { // the first turn ends once the second send has met its lease
		<-locks.heldSeen
		close(release)
	}()
	res, err := send(ctx, r, "left", "", "second")
	if err != nil {
		t.Fatalf("send after %s ended: %v, want it admitted", first.Task.ID, err)
	}
	if res.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("second turn ended %q", res.Task.Status.State)
	}
}

// staleHeldLocker is a Locker whose first Acquire that meets a held key (once armed)
// reports it held only after the holder has given the key up and its turn has left r.
type staleHeldLocker struct {
	*locking.Local
	r        *Runner
	armed    atomic.Bool
	heldSeen chan struct{}
}

func (l *staleHeldLocker) Acquire(ctx context.Context, key, holder string) (*locking.Lease, error) {
	lease, err := l.Local.Acquire(ctx, key, holder)
	if errors.Is(err, locking.ErrHeld) && l.armed.CompareAndSwap(true, false) {
		l.heldSeen <- struct{}{}
		if werr := l.Local.Wait(ctx, key); werr != nil {
			return nil, werr
		}
		for l.r.Running() != 0 && ctx.Err() == nil {
			runtime.Gosched()
		}
	}
	return lease, err
}

// waitIdle polls until r runs no turn.
func waitIdle(t *testing.T, r *Runner) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); r.Running() != 0; {
		if time.Now().After(deadline) {
			t.Fatal("a turn still runs after 10s")
		}
		runtime.Gosched()
	}
}
