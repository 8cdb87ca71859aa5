package turn

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
)

// ToolBox gives each turn the tools its agent may call (Config.Tools; nil offers none).
// The gateway's wiring implements it (package tools); the runner only hands it the turn.
type ToolBox interface {
	// ForTurn returns the tools of the turn t describes, or nil for none. It must not
	// block; the tools it returns are used by the turn's agent only, until Reply returns.
	ForTurn(t ToolTurn) agent.Tools
}

// ToolTurn is what a turn tells its tools.
type ToolTurn struct {
	Owner     string // the conversation's owner: the calling peer's identity
	ContextID string
	TaskID    string
	// Metadata is the inbound message's metadata as the peer sent it (the hop chain of
	// a message one agent sent another travels in it).
	Metadata map[string]any
	// Record appends entries (TOOL_CALL, TOOL_RESULT) to the turn's conversation in the
	// turn's epoch and returns them as stored. The caller redacts their content. Its
	// errors are the ledger's (ledger.ErrFenced once a newer turn has begun).
	Record func(ctx context.Context, entries ...ledger.Entry) ([]ledger.Entry, error)
	// Tracer makes each call's span (execute_tool {name}, the GenAI semantic
	// conventions; ids and states only). Record stamps the entries with the ids of the
	// span in its ctx. Never nil: it records nothing without Config.TracerProvider.
	Tracer trace.Tracer
}

// toolsFor returns the turn's tools from the runner's ToolBox (nil when there is none)
// and the function that ends them when the agent is done (tools with a Close method,
// such as those a process reaches with a turn-bound token, are closed).
func (tr *turnRun) toolsFor() (agent.Tools, func()) {
	box := tr.r.cfg.Tools
	if box == nil {
		return nil, func() {}
	}
	t := box.ForTurn(ToolTurn{Owner: tr.peer, ContextID: tr.lt.contextID, TaskID: tr.lt.id, Metadata: tr.metadata, Record: tr.recordTool, Tracer: tr.r.tracer})
	if c, ok := t.(interface{ Close() }); ok {
		return t, c.Close
	}
	return t, func() {}
}

// recordTool appends tool entries in the turn's epoch, with the turn's task id.
func (tr *turnRun) recordTool(ctx context.Context, entries ...ledger.Entry) ([]ledger.Entry, error) {
	for i := range entries {
		entries[i].TaskID = tr.lt.id
	}
	res, err := tr.r.store.Append(ctx, ledger.AppendRequest{Owner: tr.peer, ContextID: tr.lt.contextID, Epoch: tr.epoch, Entries: entries})
	if err != nil {
		return nil, fmt.Errorf("store a tool entry: %w", err)
	}
	return res.Entries, nil
}
