package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Dialect is a wire dialect of the protocol.
type Dialect int

// Dialects.
const (
	V03 Dialect = iota // A2A v0.3: kind discriminators, bare results, kebab-case enums
	V1                 // A2A v1.0: oneof wrappers, SCREAMING enums, no kind, no final
)

// String returns "0.3" or "1.0".
func (d Dialect) String() string {
	if d == V1 {
		return "1.0"
	}
	return "0.3"
}

// TimeFormat is the timestamp format on the wire: ISO 8601 UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// wire types: one set for both dialects; fields a dialect does not use stay empty and
// are omitted.

type wireFile struct {
	Bytes    []byte `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

type wirePart struct {
	Kind      string          `json:"kind,omitempty"`
	Text      *string         `json:"text,omitempty"`
	File      *wireFile       `json:"file,omitempty"`
	Raw       json.RawMessage `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

type wireMessage struct {
	Kind             string         `json:"kind,omitempty"`
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []wirePart     `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

type wireStatus struct {
	State     string       `json:"state"`
	Message   *wireMessage `json:"message,omitempty"`
	Timestamp string       `json:"timestamp,omitempty"`
}

type wireArtifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []wirePart     `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
}

type wireTask struct {
	Kind      string         `json:"kind,omitempty"`
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    wireStatus     `json:"status"`
	Artifacts []wireArtifact `json:"artifacts,omitempty"`
	History   []wireMessage  `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type wireStatusUpdate struct {
	Kind      string         `json:"kind,omitempty"`
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    wireStatus     `json:"status"`
	Final     *bool          `json:"final,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type wireArtifactUpdate struct {
	Kind      string         `json:"kind,omitempty"`
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  wireArtifact   `json:"artifact"`
	Append    *bool          `json:"append,omitempty"`
	LastChunk *bool          `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// ---- enums ----

func encodeRole(r Role, d Dialect) string {
	if d == V1 {
		switch r {
		case RoleUser:
			return "ROLE_USER"
		case RoleAgent:
			return "ROLE_AGENT"
		}
		return "ROLE_UNSPECIFIED"
	}
	return string(r)
}

// decodeRole accepts both spellings in either dialect (clients are not always strict).
func decodeRole(s string) (Role, bool) {
	switch s {
	case "user", "ROLE_USER":
		return RoleUser, true
	case "agent", "ROLE_AGENT":
		return RoleAgent, true
	}
	return "", false
}

func encodeState(s TaskState, d Dialect) string {
	if d == V1 {
		if s == StateUnknown || s == "" {
			return "TASK_STATE_UNSPECIFIED"
		}
		return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(string(s), "-", "_"))
	}
	return string(s)
}

// DecodeState parses a task state in either spelling ("input-required" or
// "TASK_STATE_INPUT_REQUIRED"); ok is false for anything else.
func DecodeState(s string) (TaskState, bool) {
	if rest, ok := strings.CutPrefix(s, "TASK_STATE_"); ok {
		switch {
		case rest == "UNSPECIFIED":
			return StateUnknown, true
		case rest == "UNKNOWN" || rest != strings.ToUpper(rest):
			return "", false
		}
		s = strings.ToLower(strings.ReplaceAll(rest, "_", "-"))
	}
	switch st := TaskState(s); st {
	case StateSubmitted, StateWorking, StateInputRequired, StateAuthRequired, StateCompleted,
		StateCanceled, StateFailed, StateRejected, StateUnknown:
		return st, true
	}
	return "", false
}

// ---- encoding: internal → wire ----

func kindFor(d Dialect, k string) string {
	if d == V03 {
		return k
	}
	return ""
}

func encodeParts(ps []Part, d Dialect) []wirePart {
	out := make([]wirePart, len(ps))
	for i := range ps {
		out[i] = encodePart(&ps[i], d)
	}
	return out
}

func encodePart(p *Part, d Dialect) wirePart {
	w := wirePart{Metadata: p.Metadata}
	if d == V03 {
		w.Kind = string(p.Kind)
		switch p.Kind {
		case PartText:
			w.Text = &p.Text
		case PartFile:
			w.File = &wireFile{Bytes: p.Raw, URI: p.URL, MimeType: p.MediaType, Name: p.Filename}
		case PartData:
			w.Data = p.Data
		}
		return w
	}
	w.MediaType, w.Filename = p.MediaType, p.Filename
	switch p.Kind {
	case PartText:
		w.Text = &p.Text
	case PartFile:
		if p.URL != "" {
			w.URL = &p.URL
		} else {
			w.Raw, _ = json.Marshal(p.Raw) // []byte always marshals
		}
	case PartData:
		w.Data = p.Data
	}
	return w
}

func encodeMessage(m *Message, d Dialect) wireMessage {
	return wireMessage{
		Kind:             kindFor(d, "message"),
		MessageID:        m.MessageID,
		ContextID:        m.ContextID,
		TaskID:           m.TaskID,
		Role:             encodeRole(m.Role, d),
		Parts:            encodeParts(m.Parts, d),
		Metadata:         m.Metadata,
		Extensions:       m.Extensions,
		ReferenceTaskIDs: m.ReferenceTaskIDs,
	}
}

func encodeStatus(s *TaskStatus, d Dialect) wireStatus {
	w := wireStatus{State: encodeState(s.State, d)}
	if s.Message != nil {
		m := encodeMessage(s.Message, d)
		w.Message = &m
	}
	if !s.Timestamp.IsZero() {
		w.Timestamp = s.Timestamp.UTC().Format(TimeFormat)
	}
	return w
}

func encodeArtifact(a *Artifact, d Dialect) wireArtifact {
	return wireArtifact{
		ArtifactID:  a.ArtifactID,
		Name:        a.Name,
		Description: a.Description,
		Parts:       encodeParts(a.Parts, d),
		Metadata:    a.Metadata,
		Extensions:  a.Extensions,
	}
}

func encodeTask(t *Task, d Dialect) wireTask {
	w := wireTask{
		Kind:      kindFor(d, "task"),
		ID:        t.ID,
		ContextID: t.ContextID,
		Status:    encodeStatus(&t.Status, d),
		Metadata:  t.Metadata,
	}
	if len(t.Artifacts) > 0 {
		w.Artifacts = make([]wireArtifact, len(t.Artifacts))
		for i := range t.Artifacts {
			w.Artifacts[i] = encodeArtifact(&t.Artifacts[i], d)
		}
	}
	if len(t.History) > 0 {
		w.History = make([]wireMessage, len(t.History))
		for i := range t.History {
			w.History[i] = encodeMessage(&t.History[i], d)
		}
	}
	return w
}

func encodeStatusUpdate(u *StatusUpdate, d Dialect) wireStatusUpdate {
	w := wireStatusUpdate{
		Kind:      kindFor(d, "status-update"),
		TaskID:    u.TaskID,
		ContextID: u.ContextID,
		Status:    encodeStatus(&u.Status, d),
		Metadata:  u.Metadata,
	}
	if d == V03 {
		final := u.Final
		w.Final = &final
	}
	return w
}

func boolField(v bool, d Dialect) *bool {
	if d == V03 || v {
		return &v
	}
	return nil
}

func encodeArtifactUpdate(u *ArtifactUpdate, d Dialect) wireArtifactUpdate {
	return wireArtifactUpdate{
		Kind:      kindFor(d, "artifact-update"),
		TaskID:    u.TaskID,
		ContextID: u.ContextID,
		Artifact:  encodeArtifact(&u.Artifact, d),
		Append:    boolField(u.Append, d),
		LastChunk: boolField(u.LastChunk, d),
		Metadata:  u.Metadata,
	}
}

// EncodeTask returns the JSON of t in dialect d (a bare Task in both dialects, as
// GetTask, CancelTask and tasks/get return it).
func EncodeTask(t *Task, d Dialect) ([]byte, error) {
	w := encodeTask(t, d)
	return appendWireTask(make([]byte, 0, 512), &w)
}

// EncodeSendResult returns the JSON result of a send in dialect d: bare in v0.3, wrapped
// as {"task":…} or {"message":…} in v1.0.
func EncodeSendResult(r SendResult, d Dialect) ([]byte, error) {
	if r.Task == nil && r.Message == nil {
		return nil, fmt.Errorf("%w: empty send result", ErrInternal)
	}
	return EncodeEvent(&Event{Task: r.Task, Message: r.Message}, d) // same shapes: bare or wrapped
}

// EncodeEvent returns the JSON of a stream event in dialect d: bare with `kind` in v0.3,
// a StreamResponse wrapper in v1.0.
func EncodeEvent(ev *Event, d Dialect) ([]byte, error) {
	var key string
	switch {
	case ev.Task != nil:
		key = "task"
	case ev.Message != nil:
		key = "message"
	case ev.Status != nil:
		key = "statusUpdate"
	case ev.Artifact != nil:
		key = "artifactUpdate"
	default:
		return nil, fmt.Errorf("%w: empty event", ErrInternal)
	}
	b := make([]byte, 0, 512)
	if d == V1 {
		b = append(append(append(b, `{"`...), key...), `":`...)
	}
	// The same bytes as json.Marshal of the wire value (jsonenc.go), without reflection.
	var err error
	switch key {
	case "task":
		w := encodeTask(ev.Task, d)
		b, err = appendWireTask(b, &w)
	case "message":
		w := encodeMessage(ev.Message, d)
		b, err = appendWireMessage(b, &w)
	case "statusUpdate":
		w := encodeStatusUpdate(ev.Status, d)
		b, err = appendWireStatusUpdate(b, &w)
	default:
		w := encodeArtifactUpdate(ev.Artifact, d)
		b, err = appendWireArtifactUpdate(b, &w)
	}
	if err != nil {
		return nil, err
	}
	if d == V1 {
		b = append(b, '}')
	}
	return b, nil
}

// EncodeListTasks returns the JSON of a ListTasks result (v1.0 only method).
func EncodeListTasks(r *ListTasksResult) ([]byte, error) {
	type out struct {
		Tasks         []wireTask `json:"tasks"`
		NextPageToken string     `json:"nextPageToken"`
		PageSize      int        `json:"pageSize"`
		TotalSize     int        `json:"totalSize"`
	}
	o := out{Tasks: make([]wireTask, len(r.Tasks)), NextPageToken: r.NextPageToken, PageSize: r.PageSize, TotalSize: r.TotalSize}
	for i := range r.Tasks {
		o.Tasks[i] = encodeTask(&r.Tasks[i], V1)
	}
	return json.Marshal(o)
}

// ---- decoding: wire → internal ----

func decodePart(w *wirePart, field string, d Dialect) (Part, error) {
	p := Part{Metadata: w.Metadata}
	if d == V1 {
		// v0.3 parts carry media type and name only inside a file object.
		p.MediaType, p.Filename = w.MediaType, w.Filename
	}
	kind := w.Kind
	if kind == "" { // v1.0, or a lenient v0.3 client: discriminate by the field present
		n := 0
		if w.Text != nil {
			kind, n = "text", n+1
		}
		if w.File != nil {
			kind, n = "file", n+1
		}
		if len(w.Raw) > 0 {
			kind, n = "file", n+1
		}
		if w.URL != nil {
			kind, n = "file", n+1
		}
		if len(w.Data) > 0 {
			kind, n = "data", n+1
		}
		if n != 1 {
			return Part{}, InvalidParams(field, "a part must have exactly one of text, raw, url, file or data (found %d)", n)
		}
	}
	switch kind {
	case "text":
		if w.Text == nil {
			return Part{}, InvalidParams(field+".text", "is required for a text part")
		}
		p.Kind, p.Text = PartText, *w.Text
	case "file":
		p.Kind = PartFile
		switch {
		case w.File != nil:
			if len(w.File.Bytes) > 0 && w.File.URI != "" {
				return Part{}, InvalidParams(field+".file", "has both bytes and uri; a file part has exactly one")
			}
			p.Raw, p.URL = w.File.Bytes, w.File.URI
			if p.MediaType == "" {
				p.MediaType = w.File.MimeType
			}
			if p.Filename == "" {
				p.Filename = w.File.Name
			}
		case len(w.Raw) > 0:
			if err := json.Unmarshal(w.Raw, &p.Raw); err != nil {
				return Part{}, InvalidParams(field+".raw", "must be base64")
			}
		case w.URL != nil:
			p.URL = *w.URL
		}
		if len(p.Raw) == 0 && p.URL == "" {
			return Part{}, InvalidParams(field, "a file part needs bytes or a uri")
		}
	case "data":
		if len(w.Data) == 0 || string(w.Data) == "null" {
			return Part{}, InvalidParams(field+".data", "is required for a data part")
		}
		p.Kind, p.Data = PartData, w.Data
	default:
		return Part{}, InvalidParams(field+".kind", "unknown part kind %s", EchoQuote(kind))
	}
	return p, nil
}

func decodeMessage(w *wireMessage, field string, d Dialect) (Message, error) {
	if w.Kind != "" && w.Kind != "message" {
		return Message{}, InvalidParams(field+".kind", "must be \"message\"")
	}
	if w.MessageID == "" {
		return Message{}, InvalidParams(field+".messageId", "is required")
	}
	role, ok := decodeRole(w.Role)
	if !ok {
		return Message{}, InvalidParams(field+".role", "must be user or agent (ROLE_USER or ROLE_AGENT), got %s", EchoQuote(w.Role))
	}
	if len(w.Parts) == 0 {
		return Message{}, InvalidParams(field+".parts", "at least one part is required")
	}
	m := Message{
		MessageID:        w.MessageID,
		ContextID:        w.ContextID,
		TaskID:           w.TaskID,
		Role:             role,
		Parts:            make([]Part, len(w.Parts)),
		Metadata:         w.Metadata,
		Extensions:       w.Extensions,
		ReferenceTaskIDs: w.ReferenceTaskIDs,
	}
	for i := range w.Parts {
		p, err := decodePart(&w.Parts[i], fmt.Sprintf("%s.parts[%d]", field, i), d)
		if err != nil {
			return Message{}, err
		}
		m.Parts[i] = p
	}
	return m, nil
}

func decodeHistoryLength(v *int, field string) (*int, error) {
	if v != nil && *v < 0 {
		return nil, InvalidParams(field, "must not be negative")
	}
	return v, nil
}

// unmarshalParams decodes params (an object) into v; missing or null params are an error
// when required.
func unmarshalParams(raw json.RawMessage, v any, required bool) error {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return InvalidParams("params", "is required")
		}
		return nil
	}
	if raw[0] != '{' {
		return InvalidParams("params", "must be an object")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return InvalidParams("params", "%s", describeJSONError(err))
	}
	return nil
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("field %s must be %s, got %s", Echo(te.Field), te.Type.String(), Echo(te.Value))
	}
	if te != nil {
		return fmt.Sprintf("must be %s, got %s", te.Type.String(), Echo(te.Value))
	}
	return err.Error()
}

// DecodeSendParams decodes the params of a send method in dialect d. The legacy top-level
// params.contextId is used when the message has none (DESIGN D-1).
func DecodeSendParams(raw json.RawMessage, d Dialect) (*SendParams, error) {
	var w struct {
		Tenant        string         `json:"tenant"`
		Message       *wireMessage   `json:"message"`
		ContextID     string         `json:"contextId"`
		Metadata      map[string]any `json:"metadata"`
		Configuration *struct {
			AcceptedOutputModes []string        `json:"acceptedOutputModes"`
			HistoryLength       *int            `json:"historyLength"`
			Blocking            *bool           `json:"blocking"`
			ReturnImmediately   *bool           `json:"returnImmediately"`
			PushV03             *wirePushV03    `json:"pushNotificationConfig"`
			PushV1              *wireTaskPushV1 `json:"taskPushNotificationConfig"`
		} `json:"configuration"`
	}
	if err := unmarshalParams(raw, &w, true); err != nil {
		return nil, err
	}
	if w.Message == nil {
		return nil, InvalidParams("message", "is required")
	}
	m, err := decodeMessage(w.Message, "message", d)
	if err != nil {
		return nil, err
	}
	if m.Role != RoleUser {
		return nil, InvalidParams("message.role", "a sent message must have the user role")
	}
	if m.ContextID == "" {
		m.ContextID = w.ContextID
	}
	p := &SendParams{Message: m, Metadata: w.Metadata, Tenant: w.Tenant}
	if c := w.Configuration; c != nil {
		p.Config.AcceptedOutputModes = c.AcceptedOutputModes
		if p.Config.HistoryLength, err = decodeHistoryLength(c.HistoryLength, "configuration.historyLength"); err != nil {
			return nil, err
		}
		if c.Blocking != nil && !*c.Blocking {
			p.Config.ReturnImmediately = true
		}
		if c.ReturnImmediately != nil && *c.ReturnImmediately {
			p.Config.ReturnImmediately = true
		}
		if p.Config.Push, err = decodeSendPush(c.PushV03, c.PushV1, d); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// DecodeGetTaskParams decodes GetTask / tasks/get params.
func DecodeGetTaskParams(raw json.RawMessage) (*GetTaskParams, error) {
	var w struct {
		Tenant        string `json:"tenant"`
		ID            string `json:"id"`
		HistoryLength *int   `json:"historyLength"`
	}
	if err := unmarshalParams(raw, &w, true); err != nil {
		return nil, err
	}
	if w.ID == "" {
		return nil, InvalidParams("id", "is required")
	}
	hl, err := decodeHistoryLength(w.HistoryLength, "historyLength")
	if err != nil {
		return nil, err
	}
	return &GetTaskParams{ID: w.ID, HistoryLength: hl, Tenant: w.Tenant}, nil
}

// DecodeTaskIDParams decodes CancelTask / tasks/cancel / SubscribeToTask /
// tasks/resubscribe params.
func DecodeTaskIDParams(raw json.RawMessage) (*TaskIDParams, error) {
	var w struct {
		Tenant   string         `json:"tenant"`
		ID       string         `json:"id"`
		Metadata map[string]any `json:"metadata"`
	}
	if err := unmarshalParams(raw, &w, true); err != nil {
		return nil, err
	}
	if w.ID == "" {
		return nil, InvalidParams("id", "is required")
	}
	return &TaskIDParams{ID: w.ID, Metadata: w.Metadata, Tenant: w.Tenant}, nil
}

// DecodeListTasksParams decodes ListTasks params.
func DecodeListTasksParams(raw json.RawMessage) (*ListTasksParams, error) {
	var w struct {
		Tenant               string `json:"tenant"`
		ContextID            string `json:"contextId"`
		Status               string `json:"status"`
		PageSize             *int   `json:"pageSize"`
		PageToken            string `json:"pageToken"`
		HistoryLength        *int   `json:"historyLength"`
		StatusTimestampAfter string `json:"statusTimestampAfter"`
		IncludeArtifacts     bool   `json:"includeArtifacts"`
	}
	if err := unmarshalParams(raw, &w, false); err != nil {
		return nil, err
	}
	p := &ListTasksParams{ContextID: w.ContextID, PageToken: w.PageToken, IncludeArtifacts: w.IncludeArtifacts, Tenant: w.Tenant, PageSize: 50}
	if w.Status != "" && w.Status != "TASK_STATE_UNSPECIFIED" {
		st, ok := DecodeState(w.Status)
		if !ok {
			return nil, InvalidParams("status", "unknown task state %s", EchoQuote(w.Status))
		}
		p.Status = st
	}
	if w.PageSize != nil {
		if *w.PageSize < 1 || *w.PageSize > 100 {
			return nil, InvalidParams("pageSize", "must be between 1 and 100, got %d", *w.PageSize)
		}
		p.PageSize = *w.PageSize
	}
	var err error
	if p.HistoryLength, err = decodeHistoryLength(w.HistoryLength, "historyLength"); err != nil {
		return nil, err
	}
	if w.StatusTimestampAfter != "" {
		ts, err := time.Parse(time.RFC3339Nano, w.StatusTimestampAfter)
		if err != nil {
			return nil, InvalidParams("statusTimestampAfter", "must be an RFC 3339 timestamp")
		}
		p.StatusTimestampAfter = ts
	}
	return p, nil
}
