package turn

import (
	"context"
	"slices"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/ledger"
)

// messageResult is a blocking send's answer when the agent replied with a direct Message
// (agent.Result.Message): that Message, its large parts loaded. It names no task when the
// turn started one (the caller never learns of the task the gateway keeps the turn in; it
// ended COMPLETED), and the task it continued otherwise. Errors: the artifact store's.
func (r *Runner) messageResult(ctx context.Context, lt *liveTask) (a2a.SendResult, error) {
	e := []ledger.Entry{*lt.message}
	e[0].Parts = slices.Clone(e[0].Parts) // inflate writes them; lt.stored shares them
	if err := r.inflate(ctx, e); err != nil {
		return a2a.SendResult{}, err
	}
	taskID := lt.id
	if lt.stored != nil {
		taskID = ""
	}
	m := replyMessage(&e[0], lt.contextID, taskID)
	return a2a.SendResult{Message: &m}, nil
}
