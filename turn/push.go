package turn

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/ledger"
)

// Push notification configs (issue #20). A config is a PUSH_CONFIG entry of the task's
// conversation (ledger/push.go): set, replaced (same id) or deleted by appending one, so
// it is durable on both backends; the ledger's config index finds a task's live configs.
// A config belongs to the peer that owns the task: another peer gets TASK_NOT_FOUND,
// exactly as for GetTask.

// Default push limits (Config.MaxPushConfigsPerTask, MaxPushConfigsPerPeer).
const (
	DefaultMaxPushConfigsPerTask = 10
	DefaultMaxPushConfigsPerPeer = 1000
)

var _ a2a.PushHandler = (*Runner)(nil)

// PushSupported implements a2a.PushHandler: push is enabled by Config.PushGuard.
func (r *Runner) PushSupported() bool { return r.cfg.PushGuard != nil }

// pushEnabled returns nil when push is enabled, else the PUSH_NOTIFICATION_NOT_SUPPORTED
// refusal.
func (r *Runner) pushEnabled(d a2a.Dialect) error {
	if r.cfg.PushGuard != nil {
		return nil
	}
	alt := "SendStreamingMessage or SubscribeToTask"
	if d == a2a.V03 {
		alt = "message/stream or tasks/resubscribe"
	}
	return a2a.Errorf(a2a.ErrPushNotSupported, "push notifications are not supported by this gateway; use %s", alt)
}

// dialectName is how a PushConfig record names a dialect.
func dialectName(d a2a.Dialect) string {
	if d == a2a.V03 {
		return "0.3"
	}
	return "1.0"
}

func toPushRecord(c *a2a.PushConfig) ledger.PushConfig {
	return ledger.PushConfig{ID: c.ID, Dialect: dialectName(c.Dialect), URL: c.URL, Token: c.Token,
		AuthSchemes: c.AuthSchemes, AuthCredentials: c.AuthCredentials}
}

func fromPushRecord(taskID string, c *ledger.PushConfig) a2a.TaskPushConfig {
	d := a2a.V1
	if c.Dialect == "0.3" {
		d = a2a.V03
	}
	return a2a.TaskPushConfig{TaskID: taskID, Config: a2a.PushConfig{ID: c.ID, URL: c.URL, Token: c.Token,
		AuthSchemes: c.AuthSchemes, AuthCredentials: c.AuthCredentials, Dialect: d}}
}

// pushConfigEntry is the entry that sets (or with deleted, deletes) a config of taskID.
func pushConfigEntry(taskID string, rec ledger.PushConfig) ledger.Entry {
	return pushLedgerEntry(ledger.KindPushConfig, taskID, "", rec)
}

func pushLedgerEntry(kind ledger.Kind, taskID, id string, rec any) ledger.Entry {
	b, _ := json.Marshal(rec) // records are plain structs: Marshal cannot fail
	return ledger.Entry{ID: id, TaskID: taskID, Kind: kind, Trust: ledger.TrustSystem,
		Visibility: ledger.VisibilityAudit, Actor: "gateway", Metadata: b}
}

// pushConfigs reads the push configs of peers' tasks and checks a new one (the URL guard,
// the limits). The Runner has one when push is enabled (Config.PushGuard).
type pushConfigs struct {
	store   pushConfigStore
	guard   PushGuard
	perTask int // Config.MaxPushConfigsPerTask, or its default
	perPeer int // Config.MaxPushConfigsPerPeer, or its default
}

func newPushConfigs(cfg *Config, store pushConfigStore) *pushConfigs {
	pc := &pushConfigs{store: store, guard: cfg.PushGuard, perTask: cfg.MaxPushConfigsPerTask, perPeer: cfg.MaxPushConfigsPerPeer}
	if pc.perTask <= 0 {
		pc.perTask = DefaultMaxPushConfigsPerTask
	}
	if pc.perPeer <= 0 {
		pc.perPeer = DefaultMaxPushConfigsPerPeer
	}
	return pc
}

// live returns the live configs of peer's task.
func (pc *pushConfigs) live(ctx context.Context, peer, taskID string) ([]ledger.PushConfig, error) {
	es, err := pc.store.PushConfigs(ctx, peer, taskID)
	if err != nil {
		return nil, fmt.Errorf("read push configs: %w", err)
	}
	out := make([]ledger.PushConfig, 0, len(es))
	for i := range es {
		var c ledger.PushConfig
		if err := ledger.PushRecord(&es[i], &c); err != nil {
			return nil, fmt.Errorf("push config entry %d: %w", es[i].Seq, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// check makes c a config peer may store for taskID: its id given (v1.0: a new
// UUID; v0.3: the task id, as the v0.3 SDKs do), its URL passed by the guard, and the
// limits kept (a new id counts against them; replacing one does not). Errors: a
// *pushURLError or *pushLimitError; nothing is stored.
func (pc *pushConfigs) check(ctx context.Context, peer, taskID string, c *a2a.PushConfig) error {
	if c.ID == "" {
		c.ID = uuid.NewString()
		if c.Dialect == a2a.V03 {
			c.ID = taskID
		}
	}
	if err := pc.guard.CheckURL(ctx, c.URL); err != nil {
		return &pushURLError{URL: c.URL, Err: err}
	}
	live, err := pc.live(ctx, peer, taskID)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(live, func(l ledger.PushConfig) bool { return l.ID == c.ID }) {
		return nil
	}
	if len(live) >= pc.perTask {
		return &pushLimitError{Limit: "task", Max: pc.perTask, TaskID: taskID}
	}
	n, err := pc.store.PushConfigCount(ctx, peer)
	if err != nil {
		return fmt.Errorf("count push configs: %w", err)
	}
	if n >= pc.perPeer {
		return &pushLimitError{Limit: "peer", Max: pc.perPeer}
	}
	return nil
}

// SetTaskPushConfig implements a2a.PushHandler. Errors (protocol errors, see
// protocolError): PUSH_NOTIFICATION_NOT_SUPPORTED when push is disabled; TASK_NOT_FOUND
// for a task that is not the caller's; invalid params for a URL the guard refuses or a
// limit reached.
func (r *Runner) SetTaskPushConfig(ctx context.Context, p *a2a.TaskPushConfig) (_ *a2a.TaskPushConfig, err error) {
	defer func() { err = protocolError(err) }()
	peer, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.pushEnabled(p.Config.Dialect); err != nil {
		return nil, err
	}
	conv, _, err := r.taskEntries(ctx, peer, p.TaskID)
	if err != nil {
		return nil, err
	}
	c := p.Config
	if err := r.push.check(ctx, peer, p.TaskID, &c); err != nil {
		return nil, err
	}
	_, err = r.store.Append(ctx, ledger.AppendRequest{Owner: peer, ContextID: conv.ContextID,
		Entries: []ledger.Entry{pushConfigEntry(p.TaskID, toPushRecord(&c))}})
	if err != nil {
		return nil, fmt.Errorf("store push config: %w", err)
	}
	return &a2a.TaskPushConfig{TaskID: p.TaskID, Config: c, Tenant: p.Tenant}, nil
}

// GetTaskPushConfig implements a2a.PushHandler: the config, or TASK_NOT_FOUND naming
// the config when the task has none of that id. A v0.3 get reads, when the task has no
// config of the id asked (or none is asked), the task's default config (set without an
// id: its id is the task id) or, without one, its only config: the v0.3 SDK servers
// answer a get with the task's config whatever id is asked, and v0.3 clients (the TCK's
// among them) ask for "default".
func (r *Runner) GetTaskPushConfig(ctx context.Context, p *a2a.PushConfigRef) (_ *a2a.TaskPushConfig, err error) {
	defer func() { err = protocolError(err) }()
	_, live, err := r.pushRef(ctx, p)
	if err != nil {
		return nil, err
	}
	ids := []string{p.ConfigID}
	if p.Dialect == a2a.V03 {
		ids = append(ids, p.TaskID)
		if len(live) == 1 {
			ids = append(ids, live[0].ID)
		}
	}
	for _, id := range ids {
		for i := range live {
			if id != "" && live[i].ID == id {
				t := fromPushRecord(p.TaskID, &live[i])
				t.Tenant = p.Tenant
				return &t, nil
			}
		}
	}
	return nil, &pushConfigNotFoundError{TaskID: p.TaskID, ConfigID: p.ConfigID}
}

// ListTaskPushConfigs implements a2a.PushHandler: the task's live configs, by id.
func (r *Runner) ListTaskPushConfigs(ctx context.Context, p *a2a.PushConfigRef) (_ []a2a.TaskPushConfig, err error) {
	defer func() { err = protocolError(err) }()
	_, live, err := r.pushRef(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]a2a.TaskPushConfig, len(live))
	for i := range live {
		out[i] = fromPushRecord(p.TaskID, &live[i])
		out[i].Tenant = p.Tenant
	}
	return out, nil
}

// DeleteTaskPushConfig implements a2a.PushHandler. Deleting a config that does not
// exist succeeds and stores nothing (idempotent).
func (r *Runner) DeleteTaskPushConfig(ctx context.Context, p *a2a.PushConfigRef) (err error) {
	defer func() { err = protocolError(err) }()
	peer, live, err := r.pushRef(ctx, p)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(live, func(l ledger.PushConfig) bool { return l.ID == p.ConfigID }) {
		return nil
	}
	conv, _, err := r.taskEntries(ctx, peer, p.TaskID)
	if err != nil {
		return err
	}
	_, err = r.store.Append(ctx, ledger.AppendRequest{Owner: conv.Owner, ContextID: conv.ContextID,
		Entries: []ledger.Entry{pushConfigEntry(p.TaskID, ledger.PushConfig{ID: p.ConfigID, Deleted: true})}})
	if err != nil {
		return fmt.Errorf("delete push config: %w", err)
	}
	return nil
}

// pushRef checks a get, list or delete (a caller, push enabled, the caller's task) and
// returns the caller and the task's live configs.
func (r *Runner) pushRef(ctx context.Context, p *a2a.PushConfigRef) (peer string, _ []ledger.PushConfig, _ error) {
	peer, err := caller(ctx)
	if err != nil {
		return "", nil, err
	}
	if err := r.pushEnabled(p.Dialect); err != nil {
		return "", nil, err
	}
	if _, _, err := r.taskEntries(ctx, peer, p.TaskID); err != nil { // the caller's task
		return "", nil, err
	}
	live, err := r.push.live(ctx, peer, p.TaskID)
	return peer, live, err
}

// sendPushConfig checks the push config given on a send (nil: none) and returns the
// entry that stores it with the send's first append (none when c is nil).
func (r *Runner) sendPushConfig(ctx context.Context, in *inbound, c *a2a.PushConfig) ([]ledger.Entry, error) {
	if c == nil {
		return nil, nil
	}
	if err := r.pushEnabled(c.Dialect); err != nil {
		return nil, err
	}
	cc := *c
	if err := r.push.check(ctx, in.peer, in.taskID, &cc); err != nil {
		return nil, err
	}
	return []ledger.Entry{pushConfigEntry(in.taskID, toPushRecord(&cc))}, nil
}
