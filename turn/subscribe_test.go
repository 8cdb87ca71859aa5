package turn

import (
	"fmt"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/locking"
)

// TestSubscriptionOf: the mode a task subscription is served in, chosen once from the
// task's state, where its turn runs, the resume point and whole (a retried send's
// stream), with the channel that tells the stream the turn has ended.
func TestSubscriptionOf(t *testing.T) {
	t.Parallel()
	const (
		endedNone   = "nil"      // follow on
		endedTurn   = "turn"     // the live turn's finished
		endedAlways = "already"  // endedAlready
		endedAny    = "whatever" // not used by the mode
	)
	tests := []struct {
		st             a2a.TaskState
		here, shared   bool
		afterSeq, last uint64
		whole          bool
		mode           subMode
		ended          string
	}{
		{st: a2a.StateWorking, here: true, last: 3, mode: subFollow, ended: endedTurn},
		{st: a2a.StateWorking, here: true, afterSeq: 9, last: 3, mode: subFollow, ended: endedTurn},
		{st: a2a.StateWorking, shared: true, last: 3, mode: subFollow, ended: endedNone},
		{st: a2a.StateWorking, last: 3, mode: subSnapshot, ended: endedAny},               // orphaned
		{st: a2a.StateWorking, afterSeq: 1, last: 3, mode: subFollow, ended: endedAlways}, // orphaned, resumed
		{st: a2a.StateWorking, afterSeq: 3, last: 3, mode: subNothing, ended: endedAny},   // orphaned, missed nothing
		{st: a2a.StateInputRequired, last: 3, mode: subFollowParked, ended: endedNone},
		{st: a2a.StateInputRequired, here: true, afterSeq: 3, last: 3, mode: subFollowParked, ended: endedNone},
		{st: a2a.StateInputRequired, shared: true, last: 3, mode: subFollowParked, ended: endedNone},
		{st: a2a.StateInputRequired, last: 3, whole: true, mode: subSnapshot, ended: endedAny},
		{st: a2a.StateAuthRequired, last: 3, mode: subFollowParked, ended: endedNone},
		{st: a2a.StateAuthRequired, here: true, last: 3, mode: subFollow, ended: endedTurn},
		{st: a2a.StateCompleted, last: 3, mode: subRefuse, ended: endedAny},
		{st: a2a.StateCompleted, here: true, last: 3, mode: subRefuse, ended: endedAny}, // finishing
		{st: a2a.StateCompleted, shared: true, last: 3, whole: true, mode: subSnapshot, ended: endedAny},
		{st: a2a.StateCompleted, here: true, afterSeq: 2, last: 3, mode: subFollow, ended: endedTurn}, // finishing, resumed
		{st: a2a.StateFailed, afterSeq: 2, last: 3, mode: subFollow, ended: endedAlways},              // resumed
		{st: a2a.StateFailed, afterSeq: 3, last: 3, mode: subNothing, ended: endedAny},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s here=%v shared=%v after=%d/%d whole=%v", tt.st, tt.here, tt.shared, tt.afterSeq, tt.last, tt.whole)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRunnerWith(t, Config{SharedStore: tt.shared}, locking.NewLocal(), agent.Echo{})
			lt := newLiveTask("t1", "c1", "local")
			if tt.here {
				r.mu.Lock()
				r.live["t1"] = lt
				r.mu.Unlock()
			}
			got := r.subscriptionOf("t1", tt.st, tt.afterSeq, tt.last, tt.whole)
			ended := endedAny
			switch {
			case got.ended == nil:
				ended = endedNone
			case got.ended == (<-chan struct{})(lt.finished):
				ended = endedTurn
			case got.ended == (<-chan struct{})(endedAlready):
				ended = endedAlways
			}
			if got.mode != tt.mode || (tt.ended != endedAny && ended != tt.ended) {
				t.Errorf("subscriptionOf() = mode %d, ended %s; want mode %d, ended %s", got.mode, ended, tt.mode, tt.ended)
			}
		})
	}
}
