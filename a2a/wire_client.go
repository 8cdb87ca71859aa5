package a2a

// The client side of the codec: encoders for the params a client sends, and decoders for
// the results it gets back (the inverse of DecodeSendParams, EncodeSendResult, EncodeEvent
// and EncodeTask). Result decoders accept both dialects, whatever was asked: the shapes
// are disjoint (a v1.0 oneof wrapper never has a `kind`, a v0.3 object never has a
// wrapper key), and a lenient reader interoperates with servers that mix them up.

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

type wireSendConfig struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	Blocking            *bool    `json:"blocking,omitempty"`
	ReturnImmediately   *bool    `json:"returnImmediately,omitempty"`
}

type wireSendParams struct {
	Tenant        string          `json:"tenant,omitempty"`
	Message       wireMessage     `json:"message"`
	Configuration *wireSendConfig `json:"configuration,omitempty"`
	Metadata      map[string]any  `json:"metadata,omitempty"`
}

// EncodeSendParams returns the params JSON of a send method (SendMessage,
// SendStreamingMessage, message/send, message/stream) in dialect d; [DecodeSendParams]
// reads it back. v0.3 always states `configuration.blocking` (SDKs disagree on its
// default); v1.0 sends `returnImmediately` only when set. It fails only for values
// encoding/json cannot encode (a NaN in metadata, invalid raw JSON in a data part).
func EncodeSendParams(p *SendParams, d Dialect) ([]byte, error) {
	if p == nil {
		return nil, errors.New("encode send params: nil params")
	}
	w := wireSendParams{Tenant: p.Tenant, Message: encodeMessage(&p.Message, d), Metadata: p.Metadata}
	c := wireSendConfig{AcceptedOutputModes: p.Config.AcceptedOutputModes, HistoryLength: p.Config.HistoryLength}
	if d == V03 {
		blocking := !p.Config.ReturnImmediately
		c.Blocking = &blocking
	} else if p.Config.ReturnImmediately {
		c.ReturnImmediately = &p.Config.ReturnImmediately
	}
	if len(c.AcceptedOutputModes) > 0 || c.HistoryLength != nil || c.Blocking != nil || c.ReturnImmediately != nil {
		w.Configuration = &c
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode send params: %w", err)
	}
	return b, nil
}

// EncodeGetTaskParams returns the params JSON of GetTask / tasks/get (the same in both
// dialects); [DecodeGetTaskParams] reads it back.
func EncodeGetTaskParams(p *GetTaskParams) ([]byte, error) {
	if p == nil {
		return nil, errors.New("encode get task params: nil params")
	}
	return json.Marshal(struct {
		Tenant        string `json:"tenant,omitempty"`
		ID            string `json:"id"`
		HistoryLength *int   `json:"historyLength,omitempty"`
	}{p.Tenant, p.ID, p.HistoryLength})
}

// EncodeTaskIDParams returns the params JSON of CancelTask / tasks/cancel (the same in
// both dialects); [DecodeTaskIDParams] reads it back. It fails only for metadata
// encoding/json cannot encode.
func EncodeTaskIDParams(p *TaskIDParams) ([]byte, error) {
	if p == nil {
		return nil, errors.New("encode task id params: nil params")
	}
	b, err := json.Marshal(struct {
		Tenant   string         `json:"tenant,omitempty"`
		ID       string         `json:"id"`
		Metadata map[string]any `json:"metadata,omitempty"`
	}{p.Tenant, p.ID, p.Metadata})
	if err != nil {
		return nil, fmt.Errorf("encode task id params: %w", err)
	}
	return b, nil
}

// DecodeSendResult decodes the result of a send in either dialect: a bare Task or Message
// with `kind` (v0.3), or a {"task":…} / {"message":…} wrapper (v1.0). Errors wrap
// [ErrInvalidAgentResponse].
func DecodeSendResult(raw json.RawMessage) (SendResult, error) {
	ev, err := DecodeEvent(raw)
	if err != nil {
		return SendResult{}, err
	}
	if ev.Task == nil && ev.Message == nil {
		return SendResult{}, invalidResponse("result: a send result must be a task or a message")
	}
	return SendResult{Task: ev.Task, Message: ev.Message}, nil
}

// DecodeTask decodes a Task result (GetTask, CancelTask, tasks/get, tasks/cancel): a bare
// Task in both dialects; a {"task":…} wrapper is accepted too. Errors wrap
// [ErrInvalidAgentResponse].
func DecodeTask(raw json.RawMessage) (*Task, error) {
	ev, err := DecodeEvent(raw)
	if err != nil {
		return nil, err
	}
	if ev.Task == nil {
		return nil, invalidResponse("result: want a task")
	}
	return ev.Task, nil
}

// wrapperKeys are the members of the v1.0 StreamResponse / SendMessageResponse oneof.
var wrapperKeys = [...]string{"task", "message", "statusUpdate", "artifactUpdate"}

// DecodeEvent decodes one stream event result in either dialect: a bare object with
// `kind` (v0.3; a missing kind is inferred from the fields present, as for a v1.0 bare
// Task), or a StreamResponse wrapper (v1.0). v1.0 has no `final`: a decoded v1.0 status update has Final set when its
// state ends a stream ([TaskState.EndsStream]). Seq is left zero (it comes from the SSE
// frame). Errors wrap [ErrInvalidAgentResponse].
func DecodeEvent(raw json.RawMessage) (Event, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return Event{}, invalidResponse("result: must be a JSON object")
	}
	var key string
	for _, k := range wrapperKeys {
		if _, ok := obj[k]; ok {
			if key != "" {
				return Event{}, invalidResponse("result: has both %s and %s; a response has exactly one", EchoQuote(key), EchoQuote(k))
			}
			key = k
		}
	}
	if key != "" {
		return decodeEventAs(obj[key], key, "result."+key, V1)
	}
	// A bare object: v0.3 (with kind), or a v1.0 Task (GetTask and CancelTask results are
	// bare in v1.0 too). Parts of an object without kind are read the v1.0 way (top-level
	// mediaType and filename), which loses nothing of a v0.3 part.
	var kind string
	d := V1
	if k, ok := obj["kind"]; ok {
		if err := json.Unmarshal(k, &kind); err != nil {
			return Event{}, invalidResponse("result.kind: must be a string")
		}
		d = V03
	} else {
		kind = inferKind(obj)
	}
	switch kind {
	case "task", "message":
	case "status-update":
		kind = "statusUpdate"
	case "artifact-update":
		kind = "artifactUpdate"
	case "":
		return Event{}, invalidResponse("result: not a task, message, status update or artifact update")
	default:
		return Event{}, invalidResponse("result.kind: unknown kind %s", EchoQuote(kind))
	}
	return decodeEventAs(raw, kind, "result", d)
}

// inferKind names the v0.3 object a lenient server sent without `kind`.
func inferKind(obj map[string]json.RawMessage) string {
	has := func(k string) bool { _, ok := obj[k]; return ok }
	switch {
	case has("messageId"):
		return "message"
	case has("artifact"):
		return "artifact-update"
	case has("taskId") && has("status"):
		return "status-update"
	case has("id") && has("status"):
		return "task"
	}
	return ""
}

// decodeEventAs decodes raw as the event member key ("task", "message", "statusUpdate",
// "artifactUpdate") of dialect d.
func decodeEventAs(raw json.RawMessage, key, field string, d Dialect) (Event, error) {
	switch key {
	case "task":
		var w wireTask
		if err := unmarshalResult(raw, &w, field); err != nil {
			return Event{}, err
		}
		t, err := decodeTask(&w, field, d)
		if err != nil {
			return Event{}, err
		}
		return Event{Task: &t}, nil
	case "message":
		var w wireMessage
		if err := unmarshalResult(raw, &w, field); err != nil {
			return Event{}, err
		}
		m, err := decodeMessage(&w, field, d)
		if err != nil {
			return Event{}, invalidResponse("%s", err.Error())
		}
		return Event{Message: &m}, nil
	case "statusUpdate":
		var w wireStatusUpdate
		if err := unmarshalResult(raw, &w, field); err != nil {
			return Event{}, err
		}
		if w.Kind != "" && w.Kind != "status-update" {
			return Event{}, invalidResponse("%s.kind: must be \"status-update\"", field)
		}
		st, err := decodeStatus(&w.Status, field+".status", d)
		if err != nil {
			return Event{}, err
		}
		u := &StatusUpdate{TaskID: w.TaskID, ContextID: w.ContextID, Status: st, Metadata: w.Metadata}
		if w.Final != nil {
			u.Final = *w.Final
		} else if d == V1 {
			u.Final = st.State.EndsStream()
		}
		return Event{Status: u}, nil
	default: // artifactUpdate
		var w wireArtifactUpdate
		if err := unmarshalResult(raw, &w, field); err != nil {
			return Event{}, err
		}
		if w.Kind != "" && w.Kind != "artifact-update" {
			return Event{}, invalidResponse("%s.kind: must be \"artifact-update\"", field)
		}
		a, err := decodeArtifact(&w.Artifact, field+".artifact", d)
		if err != nil {
			return Event{}, err
		}
		return Event{Artifact: &ArtifactUpdate{
			TaskID:    w.TaskID,
			ContextID: w.ContextID,
			Artifact:  a,
			Append:    w.Append != nil && *w.Append,
			LastChunk: w.LastChunk != nil && *w.LastChunk,
			Metadata:  w.Metadata,
		}}, nil
	}
}

// invalidResponse returns an [ErrInvalidAgentResponse] error with detail.
func invalidResponse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidAgentResponse, fmt.Sprintf(format, args...))
}

func unmarshalResult(raw json.RawMessage, v any, field string) error {
	if len(raw) == 0 || raw[0] != '{' {
		return invalidResponse("%s: must be a JSON object", field)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidResponse("%s: %s", field, describeJSONError(err))
	}
	return nil
}

func decodeTask(w *wireTask, field string, d Dialect) (Task, error) {
	if w.Kind != "" && w.Kind != "task" {
		return Task{}, invalidResponse("%s.kind: must be \"task\"", field)
	}
	if w.ID == "" {
		return Task{}, invalidResponse("%s.id: is required", field)
	}
	st, err := decodeStatus(&w.Status, field+".status", d)
	if err != nil {
		return Task{}, err
	}
	t := Task{ID: w.ID, ContextID: w.ContextID, Status: st, Metadata: w.Metadata}
	if len(w.Artifacts) > 0 {
		t.Artifacts = make([]Artifact, len(w.Artifacts))
		for i := range w.Artifacts {
			if t.Artifacts[i], err = decodeArtifact(&w.Artifacts[i], fmt.Sprintf("%s.artifacts[%d]", field, i), d); err != nil {
				return Task{}, err
			}
		}
	}
	if len(w.History) > 0 {
		t.History = make([]Message, len(w.History))
		for i := range w.History {
			if t.History[i], err = decodeMessage(&w.History[i], fmt.Sprintf("%s.history[%d]", field, i), d); err != nil {
				return Task{}, invalidResponse("%s", err.Error())
			}
		}
	}
	return t, nil
}

// decodeStatus reads a status; an unreadable timestamp is dropped rather than failing
// the whole response (it is informational).
func decodeStatus(w *wireStatus, field string, d Dialect) (TaskStatus, error) {
	state, ok := DecodeState(w.State)
	if !ok {
		return TaskStatus{}, invalidResponse("%s.state: unknown task state %s", field, EchoQuote(w.State))
	}
	s := TaskStatus{State: state}
	if w.Message != nil {
		m, err := decodeMessage(w.Message, field+".message", d)
		if err != nil {
			return TaskStatus{}, invalidResponse("%s", err.Error())
		}
		s.Message = &m
	}
	if w.Timestamp != "" {
		if ts, err := time.Parse(time.RFC3339Nano, w.Timestamp); err == nil {
			s.Timestamp = ts.UTC()
		}
	}
	return s, nil
}

func decodeArtifact(w *wireArtifact, field string, d Dialect) (Artifact, error) {
	a := Artifact{
		ArtifactID:  w.ArtifactID,
		Name:        w.Name,
		Description: w.Description,
		Metadata:    w.Metadata,
		Extensions:  w.Extensions,
	}
	if len(w.Parts) > 0 {
		a.Parts = make([]Part, len(w.Parts))
		for i := range w.Parts {
			p, err := decodePart(&w.Parts[i], fmt.Sprintf("%s.parts[%d]", field, i), d)
			if err != nil {
				return Artifact{}, invalidResponse("%s", err.Error())
			}
			a.Parts[i] = p
		}
	}
	return a, nil
}
