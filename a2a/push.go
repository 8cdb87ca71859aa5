package a2a

import (
	"context"
	"encoding/json"
)

// PushConfig is a push notification config: where to post a task's updates and how to
// authenticate to the receiver. Dialect is the dialect of the peer that set it (the
// notifications are encoded in it); the decoders fill it.
type PushConfig struct {
	ID              string
	URL             string
	Token           string
	AuthSchemes     []string // v1.0 carries one scheme, v0.3 a list
	AuthCredentials string
	Dialect         Dialect
}

// TaskPushConfig is a push config of a task (TaskPushNotificationConfig).
type TaskPushConfig struct {
	TaskID string
	Config PushConfig
	Tenant string
}

// PushConfigRef names a task's push config (ConfigID empty: the list of all of them, or
// for a v0.3 get without pushNotificationConfigId the task's default config).
type PushConfigRef struct {
	TaskID   string
	ConfigID string
	Tenant   string
	Dialect  Dialect
}

// PushHandler serves the push config methods. A [Handler] that does not implement it,
// or answers [ErrPushNotSupported], has push notifications disabled.
type PushHandler interface {
	// PushSupported reports whether push notifications are enabled; when false every
	// push method answers [ErrPushNotSupported] before its params are read.
	PushSupported() bool
	// SetTaskPushConfig stores the config (replacing the task's config of the same id)
	// and returns it as stored (with its id).
	SetTaskPushConfig(ctx context.Context, p *TaskPushConfig) (*TaskPushConfig, error)
	GetTaskPushConfig(ctx context.Context, p *PushConfigRef) (*TaskPushConfig, error)
	ListTaskPushConfigs(ctx context.Context, p *PushConfigRef) ([]TaskPushConfig, error)
	// DeleteTaskPushConfig removes a config; deleting one that does not exist succeeds.
	DeleteTaskPushConfig(ctx context.Context, p *PushConfigRef) error
}

// wirePushAuthV1 and the others are the configs as each dialect writes them.
type wirePushAuthV1 struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials,omitempty"`
}

type wirePushAuthV03 struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials,omitempty"`
}

// wireTaskPushV1 is the v1.0 TaskPushNotificationConfig (flat).
type wireTaskPushV1 struct {
	Tenant         string          `json:"tenant,omitempty"`
	ID             string          `json:"id,omitempty"`
	TaskID         string          `json:"taskId"`
	URL            string          `json:"url"`
	Token          string          `json:"token,omitempty"`
	Authentication *wirePushAuthV1 `json:"authentication,omitempty"`
}

// wirePushV03 is the v0.3 PushNotificationConfig.
type wirePushV03 struct {
	ID             string           `json:"id,omitempty"`
	URL            string           `json:"url"`
	Token          string           `json:"token,omitempty"`
	Authentication *wirePushAuthV03 `json:"authentication,omitempty"`
}

type wireTaskPushV03 struct {
	TaskID                 string       `json:"taskId"`
	PushNotificationConfig *wirePushV03 `json:"pushNotificationConfig"`
}

func pushFromV1(w *wireTaskPushV1) PushConfig {
	c := PushConfig{ID: w.ID, URL: w.URL, Token: w.Token, Dialect: V1}
	if w.Authentication != nil {
		c.AuthSchemes = []string{w.Authentication.Scheme}
		c.AuthCredentials = w.Authentication.Credentials
	}
	return c
}

func pushFromV03(w *wirePushV03) PushConfig {
	c := PushConfig{ID: w.ID, URL: w.URL, Token: w.Token, Dialect: V03}
	if w.Authentication != nil {
		c.AuthSchemes = w.Authentication.Schemes
		c.AuthCredentials = w.Authentication.Credentials
	}
	return c
}

func checkPush(c *PushConfig, field string) error {
	if c.URL == "" {
		return InvalidParams(field+"url", "is required")
	}
	if c.Dialect == V1 && len(c.AuthSchemes) == 1 && c.AuthSchemes[0] == "" {
		return InvalidParams(field+"authentication.scheme", "is required")
	}
	return nil
}

// DecodeSetPushParams decodes CreateTaskPushNotificationConfig (v1.0) or
// tasks/pushNotificationConfig/set (v0.3) params.
func DecodeSetPushParams(raw json.RawMessage, d Dialect) (*TaskPushConfig, error) {
	if d == V1 {
		var w wireTaskPushV1
		if err := unmarshalParams(raw, &w, true); err != nil {
			return nil, err
		}
		if w.TaskID == "" {
			return nil, InvalidParams("taskId", "is required")
		}
		p := &TaskPushConfig{TaskID: w.TaskID, Config: pushFromV1(&w), Tenant: w.Tenant}
		return p, checkPush(&p.Config, "")
	}
	var w wireTaskPushV03
	if err := unmarshalParams(raw, &w, true); err != nil {
		return nil, err
	}
	if w.TaskID == "" {
		return nil, InvalidParams("taskId", "is required")
	}
	if w.PushNotificationConfig == nil {
		return nil, InvalidParams("pushNotificationConfig", "is required")
	}
	p := &TaskPushConfig{TaskID: w.TaskID, Config: pushFromV03(w.PushNotificationConfig)}
	return p, checkPush(&p.Config, "pushNotificationConfig.")
}

// pushMethod says which push method a name is.
type pushMethod int

const (
	pushSet pushMethod = iota
	pushGet
	pushList
	pushDelete
)

var pushMethods = map[string]pushMethod{
	"CreateTaskPushNotificationConfig":    pushSet,
	"GetTaskPushNotificationConfig":       pushGet,
	"ListTaskPushNotificationConfigs":     pushList,
	"DeleteTaskPushNotificationConfig":    pushDelete,
	"tasks/pushNotificationConfig/set":    pushSet,
	"tasks/pushNotificationConfig/get":    pushGet,
	"tasks/pushNotificationConfig/list":   pushList,
	"tasks/pushNotificationConfig/delete": pushDelete,
}

// DecodePushRefParams decodes the params of a push get, list or delete: v1.0
// {taskId, id} (id required for get and delete), v0.3 {id, pushNotificationConfigId}
// (pushNotificationConfigId required for delete).
func DecodePushRefParams(raw json.RawMessage, d Dialect, m pushMethod) (*PushConfigRef, error) {
	var w struct {
		Tenant   string `json:"tenant"`
		TaskID   string `json:"taskId"`
		ID       string `json:"id"`
		ConfigID string `json:"pushNotificationConfigId"`
	}
	if err := unmarshalParams(raw, &w, true); err != nil {
		return nil, err
	}
	if d == V1 {
		if w.TaskID == "" {
			return nil, InvalidParams("taskId", "is required")
		}
		if w.ID == "" && m != pushList {
			return nil, InvalidParams("id", "is required")
		}
		return &PushConfigRef{TaskID: w.TaskID, ConfigID: w.ID, Tenant: w.Tenant, Dialect: d}, nil
	}
	if w.ID == "" {
		return nil, InvalidParams("id", "is required")
	}
	if w.ConfigID == "" && m == pushDelete {
		return nil, InvalidParams("pushNotificationConfigId", "is required")
	}
	if m == pushList {
		w.ConfigID = ""
	}
	return &PushConfigRef{TaskID: w.ID, ConfigID: w.ConfigID, Dialect: d}, nil
}

// pushWire returns the config as dialect d writes a TaskPushNotificationConfig.
func pushWire(t *TaskPushConfig, d Dialect) any {
	c := &t.Config
	if d == V1 {
		w := wireTaskPushV1{Tenant: t.Tenant, ID: c.ID, TaskID: t.TaskID, URL: c.URL, Token: c.Token}
		if len(c.AuthSchemes) > 0 {
			w.Authentication = &wirePushAuthV1{Scheme: c.AuthSchemes[0], Credentials: c.AuthCredentials}
		}
		return w
	}
	w := &wirePushV03{ID: c.ID, URL: c.URL, Token: c.Token}
	if len(c.AuthSchemes) > 0 {
		w.Authentication = &wirePushAuthV03{Schemes: c.AuthSchemes, Credentials: c.AuthCredentials}
	}
	return wireTaskPushV03{TaskID: t.TaskID, PushNotificationConfig: w}
}

// EncodeTaskPushConfig returns the JSON of a TaskPushNotificationConfig in dialect d.
func EncodeTaskPushConfig(t *TaskPushConfig, d Dialect) ([]byte, error) {
	return json.Marshal(pushWire(t, d))
}

// EncodeTaskPushConfigs returns the JSON of a list result: {"configs": […],
// "nextPageToken": ""} in v1.0, a bare array in v0.3.
func EncodeTaskPushConfigs(ts []TaskPushConfig, d Dialect) ([]byte, error) {
	ws := make([]any, len(ts))
	for i := range ts {
		ws[i] = pushWire(&ts[i], d)
	}
	if d == V1 {
		return json.Marshal(struct {
			Configs       []any  `json:"configs"`
			NextPageToken string `json:"nextPageToken"`
		}{ws, ""})
	}
	return json.Marshal(ws)
}

// servePush runs a push config method on h.
func servePush(ctx context.Context, h Handler, method string, raw json.RawMessage, d Dialect) ([]byte, error) {
	ph, ok := h.(PushHandler)
	if !ok || !ph.PushSupported() {
		return nil, pushNotSupported(d)
	}
	switch m := pushMethods[method]; m {
	case pushSet:
		p, err := DecodeSetPushParams(raw, d)
		if err != nil {
			return nil, err
		}
		t, err := ph.SetTaskPushConfig(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeTaskPushConfig(t, d)
	default:
		p, err := DecodePushRefParams(raw, d, m)
		if err != nil {
			return nil, err
		}
		return servePushRef(ctx, ph, m, p, d)
	}
}

func servePushRef(ctx context.Context, ph PushHandler, m pushMethod, p *PushConfigRef, d Dialect) ([]byte, error) {
	switch m {
	case pushGet:
		t, err := ph.GetTaskPushConfig(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeTaskPushConfig(t, d)
	case pushList:
		ts, err := ph.ListTaskPushConfigs(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeTaskPushConfigs(ts, d)
	}
	if err := ph.DeleteTaskPushConfig(ctx, p); err != nil {
		return nil, err
	}
	return []byte("null"), nil
}

// pushNotSupported is the answer of the push methods when push is disabled.
func pushNotSupported(d Dialect) error {
	if d == V1 {
		return Errorf(ErrPushNotSupported, "push notifications are not supported by this gateway; use SendStreamingMessage or SubscribeToTask")
	}
	return Errorf(ErrPushNotSupported, "push notifications are not supported by this gateway; use message/stream or tasks/resubscribe")
}

// decodeSendPush decodes the push config of a send's configuration in dialect d. The
// other dialect's field is refused (-32602 naming it and the right one), not ignored as
// other unknown fields are: a client that used it asked for a webhook and would get
// none without a word.
func decodeSendPush(v03 *wirePushV03, v1 *wireTaskPushV1, d Dialect) (*PushConfig, error) {
	var c PushConfig
	switch {
	case d == V1 && v03 != nil:
		return nil, InvalidParams("configuration.pushNotificationConfig", "is the v0.3 field; a v1.0 send takes its push config in configuration.taskPushNotificationConfig (nothing was stored)")
	case d == V03 && v1 != nil:
		return nil, InvalidParams("configuration.taskPushNotificationConfig", "is the v1.0 field; a v0.3 send takes its push config in configuration.pushNotificationConfig (nothing was stored)")
	case d == V1 && v1 != nil:
		c = pushFromV1(v1)
		return &c, checkPush(&c, "configuration.taskPushNotificationConfig.")
	case d == V03 && v03 != nil:
		c = pushFromV03(v03)
		return &c, checkPush(&c, "configuration.pushNotificationConfig.")
	}
	return nil, nil
}
