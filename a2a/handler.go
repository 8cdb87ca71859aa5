package a2a

import "context"

// Handler serves the protocol's methods. It is implemented by the gateway's turn runner;
// the JSON-RPC transport ([NewJSONRPCHandler]) decodes requests into its parameters and
// encodes its results in the caller's dialect.
//
// The ctx of each call is the request's: through the transports it carries the request's
// log scope (request id, method; package internal/logctx), so a Handler that logs with
// the slog ...Context calls ties its lines to the request.
//
// Errors should be this package's sentinels or [*Error] values wrapping them; anything
// else is answered as "internal error".
type Handler interface {
	// SendMessage runs (or continues) a task with the message and returns the task when it
	// reaches a terminal or interrupted state, or at once with ReturnImmediately.
	SendMessage(ctx context.Context, p *SendParams) (SendResult, error)
	// SendStreamingMessage starts the same work and returns its event stream, which
	// begins with the Task.
	SendStreamingMessage(ctx context.Context, p *SendParams) (Stream, error)
	// GetTask returns a task ([ErrTaskNotFound] if the caller cannot see it).
	GetTask(ctx context.Context, p *GetTaskParams) (*Task, error)
	// ListTasks returns a page of the caller's tasks.
	ListTasks(ctx context.Context, p *ListTasksParams) (*ListTasksResult, error)
	// CancelTask cancels a task: [ErrTaskNotCancelable] for a terminal task.
	CancelTask(ctx context.Context, p *TaskIDParams) (*Task, error)
	// SubscribeToTask streams a task's events after p.AfterSeq, starting with a Task
	// snapshot; [ErrUnsupportedOperation] for a terminal task.
	SubscribeToTask(ctx context.Context, p *SubscribeParams) (Stream, error)
}

// Stream is a sequence of events. Next blocks until the next event, the end of the
// stream (io.EOF), or ctx is done (ctx.Err()). Close releases the stream; it is safe to
// call more than once.
type Stream interface {
	Next(ctx context.Context) (Event, error)
	Close()
}

// ReadyStream is a Stream that can tell whether Next would return at once (an event, the
// end or an error) without waiting. The SSE writer then writes that event before it
// flushes, so events that became ready together (committed together) leave in one write.
// Ready must not report true unless Next will not wait.
type ReadyStream interface {
	Stream
	Ready() bool
}
