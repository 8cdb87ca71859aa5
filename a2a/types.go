package a2a

import (
	"encoding/json"
	"time"
)

// Role is the sender of a message.
type Role string

// Roles of the internal model (v0.3 spelling; v1.0 encodes them as ROLE_*).
const (
	RoleUser  Role = "user"
	RoleAgent Role = "agent"
)

// TaskState is the state of a task (v0.3 spelling; v1.0 encodes them as TASK_STATE_*).
type TaskState string

// Task states.
const (
	StateSubmitted     TaskState = "submitted"
	StateWorking       TaskState = "working"
	StateInputRequired TaskState = "input-required"
	StateAuthRequired  TaskState = "auth-required"
	StateCompleted     TaskState = "completed"
	StateCanceled      TaskState = "canceled"
	StateFailed        TaskState = "failed"
	StateRejected      TaskState = "rejected"
	StateUnknown       TaskState = "unknown"
)

// Terminal reports whether no further work can happen in a task in state s.
func (s TaskState) Terminal() bool {
	switch s {
	case StateCompleted, StateCanceled, StateFailed, StateRejected:
		return true
	}
	return false
}

// Interrupted reports whether the task waits for its client (input or auth required).
func (s TaskState) Interrupted() bool {
	return s == StateInputRequired || s == StateAuthRequired
}

// EndsStream reports whether a stream closes after a status in state s: terminal states
// and INPUT_REQUIRED (a2a-spec §6.1 recommendation).
func (s TaskState) EndsStream() bool { return s.Terminal() || s == StateInputRequired }

// PartKind discriminates the content of a [Part].
type PartKind string

// Part kinds.
const (
	PartText PartKind = "text"
	PartFile PartKind = "file"
	PartData PartKind = "data"
)

// Part is one piece of message or artifact content. Exactly the fields of its Kind are
// meaningful: Text for text; Raw or URL (plus MediaType, Filename) for file; Data for data.
type Part struct {
	Kind      PartKind
	Text      string
	Raw       []byte
	URL       string
	Data      json.RawMessage
	MediaType string
	Filename  string
	Metadata  map[string]any
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Kind: PartText, Text: s} }

// Message is one message of a conversation.
type Message struct {
	MessageID        string
	ContextID        string
	TaskID           string
	Role             Role
	Parts            []Part
	Metadata         map[string]any
	Extensions       []string
	ReferenceTaskIDs []string
}

// Text returns the concatenation of the message's text parts.
func (m *Message) Text() string { return PartsText(m.Parts) }

// PartsText returns the concatenation of the text parts in ps.
func PartsText(ps []Part) string {
	if len(ps) == 1 && ps[0].Kind == PartText {
		return ps[0].Text
	}
	var n int
	for _, p := range ps {
		if p.Kind == PartText {
			n += len(p.Text)
		}
	}
	b := make([]byte, 0, n)
	for _, p := range ps {
		if p.Kind == PartText {
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// TaskStatus is a task's state at a moment.
type TaskStatus struct {
	State     TaskState
	Message   *Message
	Timestamp time.Time // zero: not set
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string
	Name        string
	Description string
	Parts       []Part
	Metadata    map[string]any
	Extensions  []string
}

// Task is a unit of work in a context.
type Task struct {
	ID        string
	ContextID string
	Status    TaskStatus
	Artifacts []Artifact
	History   []Message
	Metadata  map[string]any
}

// StatusUpdate is a streamed change of a task's status. Final is set when the stream ends
// after it (encoded only in v0.3).
type StatusUpdate struct {
	TaskID    string
	ContextID string
	Status    TaskStatus
	Final     bool
	Metadata  map[string]any
}

// ArtifactUpdate is a streamed artifact chunk. Append means "concatenate onto the earlier
// artifact with the same ArtifactID"; LastChunk marks the artifact's final chunk.
type ArtifactUpdate struct {
	TaskID    string
	ContextID string
	Artifact  Artifact
	Append    bool
	LastChunk bool
	Metadata  map[string]any
}

// Event is one streamed event; exactly one of Task, Message, Status and Artifact is set.
// Seq is the event's sequence number (the SSE `id:`), increasing within its stream source.
type Event struct {
	Seq      uint64
	Task     *Task
	Message  *Message
	Status   *StatusUpdate
	Artifact *ArtifactUpdate
}

// TaskID returns the id of the task the event belongs to ("" if none is set).
func (ev *Event) TaskID() string {
	switch {
	case ev.Task != nil:
		return ev.Task.ID
	case ev.Status != nil:
		return ev.Status.TaskID
	case ev.Artifact != nil:
		return ev.Artifact.TaskID
	case ev.Message != nil:
		return ev.Message.TaskID
	}
	return ""
}

// SendConfig is the configuration of a send.
type SendConfig struct {
	AcceptedOutputModes []string
	// HistoryLength limits the history of the returned task: nil = server default (all),
	// 0 = no history field, N = at most the N newest messages.
	HistoryLength *int
	// ReturnImmediately returns the task as soon as it is created (v1.0 returnImmediately,
	// v0.3 blocking:false). The zero value blocks until a terminal or interrupted state.
	ReturnImmediately bool
	// Push, when set, is a push config for the task the send starts or continues (v0.3
	// configuration.pushNotificationConfig, v1.0 configuration.taskPushNotificationConfig).
	Push *PushConfig
}

// SendParams are the parameters of SendMessage / message/send and their streaming twins.
type SendParams struct {
	Message  Message
	Config   SendConfig
	Metadata map[string]any
	Tenant   string
}

// SendResult is the result of a send: a Task or (never, from this gateway) a Message.
type SendResult struct {
	Task    *Task
	Message *Message
}

// GetTaskParams are the parameters of GetTask / tasks/get.
type GetTaskParams struct {
	ID            string
	HistoryLength *int
	Tenant        string
}

// TaskIDParams identify a task (CancelTask / tasks/cancel).
type TaskIDParams struct {
	ID       string
	Metadata map[string]any
	Tenant   string
}

// SubscribeParams are the parameters of SubscribeToTask / tasks/resubscribe. AfterSeq is
// the SSE Last-Event-ID (0: from the start).
type SubscribeParams struct {
	ID       string
	AfterSeq uint64
	Tenant   string
}

// ListTasksParams are the parameters of ListTasks.
type ListTasksParams struct {
	ContextID            string
	Status               TaskState // "": any
	PageSize             int       // 0: default 50; 1..100
	PageToken            string
	HistoryLength        *int
	StatusTimestampAfter time.Time // zero: no filter
	IncludeArtifacts     bool
	Tenant               string
}

// ListTasksResult is a page of tasks, newest status first.
type ListTasksResult struct {
	Tasks         []Task
	NextPageToken string
	PageSize      int
	TotalSize     int
}
