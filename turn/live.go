package turn

import (
	"context"

	"github.com/a2a-gateway/gateway/ledger"
)

// liveTask is what the Runner knows of a running task beyond the ledger: how to cancel
// it and when it has ended. Its events go through the context's feed.
type liveTask struct {
	id, contextID, owner string
	cancel               context.CancelCauseFunc
	finished             chan struct{} // closed when the turn's goroutine has ended

	// Set by the turn's goroutine before finished is closed: every entry of the task as the
	// ledger stored it, when this turn created the task and a blocking send waits for it (so
	// the task folds without a read).
	stored []ledger.Entry
	// unrecorded is why the turn's end could not be stored at all (its final append and
	// the failure record both failed): the ledger still says "working". Set before
	// finished is closed; nil when the end was stored.
	unrecorded error
	// message is the stored reply when the agent answered with a direct Message
	// (agent.Result.Message); set before finished is closed.
	message *ledger.Entry
}

func newLiveTask(id, contextID, owner string) *liveTask {
	return &liveTask{id: id, contextID: contextID, owner: owner, finished: make(chan struct{})}
}
