package turn

import (
	"errors"
	"fmt"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// Causes a turn names by itself.
var (
	// errShutdown: the gateway is stopping, so the request is refused.
	errShutdown = errors.New("gateway shutting down")
	// errCanceledByPeer is the cause of a turn canceled with CancelTask.
	errCanceledByPeer = errors.New("canceled by the peer")
)

// paramError is a request parameter that turn refuses: Field names it as the peer does
// ("message.parts", "pageToken") and Reason says why, as a plain phrase. When Reason is
// empty the cause gives it (Err, a *contextid.Error). protocolError makes it -32602.
type paramError struct {
	Field  string
	Reason string
	Err    error
}

func (e *paramError) Error() string { return e.Field + ": " + e.reason() }

// Unwrap returns the cause, if any.
func (e *paramError) Unwrap() error { return e.Err }

func (e *paramError) reason() string {
	var ce *contextid.Error
	if e.Reason == "" && errors.As(e.Err, &ce) {
		return ce.Reason
	}
	return e.Reason
}

// limitError is a message over one of Config's size limits; nothing of it was
// stored. Limit names the limit as Observer.LimitExceeded does ("parts", "part_bytes",
// "message_bytes"), Field the part of the message at fault, Got and Max the sizes.
type limitError struct {
	Limit    string
	Field    string
	Got, Max int
}

func (e *limitError) Error() string { return e.Field + ": " + e.Reason() }

// Reason says which limit the message breaks, in the peer's terms.
func (e *limitError) Reason() string {
	switch e.Limit {
	case "parts":
		return fmt.Sprintf("the message has %d parts; the limit is %d", e.Got, e.Max)
	case "part_bytes":
		return fmt.Sprintf("the part holds %d bytes; the limit is %d per part", e.Got, e.Max)
	}
	return fmt.Sprintf("the message holds %d bytes; the limit is %d", e.Got, e.Max)
}

// streamLimitError is a stream refused because its peer has Max streams open
// (Config.MaxStreamsPerPeer).
type streamLimitError struct {
	Peer string
	Max  int
}

func (e *streamLimitError) Error() string {
	return fmt.Sprintf("peer %s has %d streams open, the limit; close one and retry", a2a.EchoQuote(e.Peer), e.Max)
}

// busyError is a request refused because task Holder ("" when the lease service could
// not say) runs in ContextID. Err is the cause (a *locking.HeldError).
type busyError struct {
	ContextID string
	Holder    string
	Err       error
}

func (e *busyError) Error() string {
	running := "another task is running"
	if e.Holder != "" {
		running = "task " + a2a.Echo(e.Holder) + " is running"
	}
	return fmt.Sprintf("context %s is busy: %s; retry when it completes", a2a.EchoQuote(e.ContextID), running)
}

// Unwrap returns the cause.
func (e *busyError) Unwrap() error { return e.Err }

// taskNotFoundError is a task that does not exist, or is another peer's (which a peer
// must not be able to tell apart). It unwraps to ledger.ErrNotFound.
type taskNotFoundError struct {
	TaskID string
}

func (e *taskNotFoundError) Error() string {
	return fmt.Sprintf("task %s not found", a2a.EchoQuote(e.TaskID))
}

// Unwrap returns ledger.ErrNotFound.
func (e *taskNotFoundError) Unwrap() error { return ledger.ErrNotFound }

// pushURLError is a push config URL that Config.PushGuard refused; Err is the guard's
// error, whose message the peer gets. Nothing was stored.
type pushURLError struct {
	URL string
	Err error
}

func (e *pushURLError) Error() string { return "push notification url refused: " + e.Err.Error() }

// Unwrap returns the guard's error.
func (e *pushURLError) Unwrap() error { return e.Err }

// pushLimitError is a new push config over a limit: Limit is "task" (configs of TaskID)
// or "peer" (configs of the caller), Max the limit. Nothing was stored.
type pushLimitError struct {
	Limit  string
	Max    int
	TaskID string
}

func (e *pushLimitError) Error() string {
	if e.Limit == "task" {
		return fmt.Sprintf("task %s has %d push notification configs, the limit; delete one or reuse its id", a2a.EchoQuote(e.TaskID), e.Max)
	}
	return fmt.Sprintf("you have %d push notification configs, the limit; delete one or reuse its id", e.Max)
}

// pushConfigNotFoundError is a push config id the task does not have.
type pushConfigNotFoundError struct {
	TaskID, ConfigID string
}

func (e *pushConfigNotFoundError) Error() string {
	return fmt.Sprintf("push notification config %s of task %s not found", a2a.EchoQuote(e.ConfigID), a2a.EchoQuote(e.TaskID))
}

// protocolError is hop 1 of the error mapping (house style B4), the one place where turn
// chooses the a2a error a peer gets (values from the request that it repeats, in messages
// and ErrorInfo metadata, are capped by a2a.Echo / a2a.EchoQuote): every a2a.Handler method and stream of the Runner
// returns its error through it. It turns the typed errors and sentinels of turn and of the
// packages a turn calls into a2a errors that tell the peer what to fix. The field and the
// reason travel as values; nothing here reads error text. An *a2a.Error is returned as it
// is, and so is an error it does not know (the transport reports it as internal).
func protocolError(err error) error {
	var (
		ae *a2a.Error
		pe *paramError
		le *limitError
		ce *contextid.Error
		fe *ledger.FieldError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &pe):
		return a2a.InvalidParams(pe.Field, "%s", pe.reason())
	case errors.As(err, &le):
		return a2a.InvalidParams(le.Field, "%s", le.Reason())
	case errors.As(err, &ce):
		return a2a.InvalidParams("message.contextId", "%s", ce.Reason)
	case errors.As(err, &fe):
		return a2a.InvalidParams(messageField(fe), "%s", fe.Reason)
	}
	if perr := pushError(err); perr != nil {
		return perr
	}
	return refusalError(err)
}

// pushError maps the push config refusals; nil for any other error.
func pushError(err error) error {
	var (
		ue *pushURLError
		le *pushLimitError
		ne *pushConfigNotFoundError
	)
	switch {
	case errors.As(err, &ue):
		return a2a.InvalidParams("url", "%s", ue.Error())
	case errors.As(err, &le):
		return &a2a.Error{Err: a2a.ErrInvalidParams, Message: le.Error(),
			Metadata: map[string]string{"limit": "push_configs_per_" + le.Limit, "max": fmt.Sprint(le.Max)}}
	case errors.As(err, &ne):
		return a2a.Errorf(a2a.ErrTaskNotFound, "%s", ne.Error())
	}
	return nil
}

// unrecordedEndError: a turn ran, but its end (the reply and final status, then the
// record of its failure) could not be stored, so the ledger still says the task is
// working until a restart's recovery marks it failed. Err is why the final append failed.
type unrecordedEndError struct {
	TaskID string
	Err    error
}

func (e *unrecordedEndError) Error() string {
	return fmt.Sprintf("task %s: its end could not be recorded: %v", e.TaskID, e.Err)
}

func (e *unrecordedEndError) Unwrap() error { return e.Err }

// endError is the a2a error of an unrecordedEndError: UNAVAILABLE, or STORAGE_UNAVAILABLE
// naming the cause when the storage refused the write. Unlike a refused send, the message
// was stored: only the reply was lost.
func endError(ue *unrecordedEndError) error {
	var se *ledger.StorageError
	if errors.As(ue.Err, &se) {
		return &a2a.Error{Err: a2a.ErrStorageUnavailable, Metadata: map[string]string{"cause": string(se.Cause), "taskId": a2a.Echo(ue.TaskID)},
			Message: fmt.Sprintf("task %s: the gateway's storage is %s, so the reply could not be stored (your message was); the task stays unfinished until the gateway recovers; retry later in a new task", a2a.EchoQuote(ue.TaskID), se.Cause)}
	}
	return a2a.Errorf(a2a.ErrUnavailable, "task %s ended without a recorded final status (the ledger failed); read it with GetTask", a2a.EchoQuote(ue.TaskID))
}

// refusalError maps the refusals that are not about a parameter; see protocolError.
func refusalError(err error) error {
	var (
		ue *unrecordedEndError
		be *busyError
		nf *taskNotFoundError
		sl *streamLimitError
		se *ledger.StorageError
		qe *ledger.QuarantinedError
	)
	switch {
	case errors.As(err, &ue):
		return endError(ue)
	case errors.As(err, &qe):
		return damagedError(qe)
	case errors.As(err, &nf):
		return a2a.Errorf(a2a.ErrTaskNotFound, "%s", nf.Error())
	case errors.As(err, &be):
		meta := map[string]string{"contextId": a2a.Echo(be.ContextID)}
		if be.Holder != "" {
			meta["taskId"] = a2a.Echo(be.Holder)
		}
		return &a2a.Error{Err: a2a.ErrContextBusy, Message: be.Error(), Metadata: meta}
	case errors.As(err, &sl):
		return &a2a.Error{Err: a2a.ErrRateLimited, Message: sl.Error(),
			Metadata: map[string]string{"peer": a2a.Echo(sl.Peer), "retryAfterSeconds": "1"}}
	case errors.Is(err, locking.ErrHeld):
		return a2a.Errorf(a2a.ErrContextBusy, "another task is running in this context; retry when it completes")
	case errors.Is(err, ledger.ErrFenced):
		return a2a.Errorf(a2a.ErrContextBusy, "a newer turn took over this context; retry when it completes")
	case errors.Is(err, errShutdown), errors.Is(err, locking.ErrClosed):
		return a2a.Errorf(a2a.ErrUnavailable, "the gateway is shutting down; retry on another instance or later")
	case errors.Is(err, locking.ErrUnavailable):
		return a2a.Errorf(a2a.ErrLockUnavailable, "the lock service is unavailable; retry later")
	case errors.As(err, &se):
		// The ledger stores nothing of a write its storage refused (ledger.Append).
		return &a2a.Error{Err: a2a.ErrStorageUnavailable, Metadata: map[string]string{"cause": string(se.Cause)},
			Message: fmt.Sprintf("the gateway's storage is %s; nothing of this request was stored; retry later", se.Cause)}
	}
	return err
}

// messageField names a ledger field as the peer knows it: the entries a turn appends
// come from the peer's message, so entries[i].messageId is message.messageId.
func messageField(fe *ledger.FieldError) string {
	switch {
	case fe.Entry < 0:
		return fe.Field
	case fe.Field == "":
		return "message"
	}
	return "message." + fe.Field
}

// damagedError is the a2a error of a conversation the ledger quarantined: -32603 with
// reason CONVERSATION_DAMAGED, naming the contextId (when the ledger could read it). What
// is damaged (pages, seqs) is for the operator's log and `gateway ledger verify`, not
// for the peer.
func damagedError(qe *ledger.QuarantinedError) error {
	meta := map[string]string{}
	name := "this conversation"
	if qe.ContextID != "" {
		meta["contextId"] = qe.ContextID
		name = fmt.Sprintf("conversation %q", qe.ContextID)
	}
	return &a2a.Error{Err: a2a.ErrConversationDamaged, Metadata: meta, Message: fmt.Sprintf(
		"%s is quarantined: its stored data is damaged, so no turn runs in it and its tasks are not served; "+
			"send without contextId to start a new conversation (the operator can salvage the ledger)", name)}
}

// othersDamage reports whether err is the quarantine of a conversation that is not
// peer's (or whose owner the ledger could not read): the peer is told "not found", as
// for any task that is not its own.
func othersDamage(err error, peer string) bool {
	var qe *ledger.QuarantinedError
	return errors.As(err, &qe) && qe.Owner != peer
}

// agentFailureText is the status text of a task whose agent failed with err: the cause,
// when the backend named one the peer could act on (agent.CauseOf), and what to do about
// it; else textAgent. The texts name no backend, URL, model or upstream text.
func agentFailureText(err error) string {
	const prefix = "the agent failed to reply: "
	switch agent.CauseOf(err) {
	case agent.CauseRateLimited:
		return prefix + "its model's service is rate limiting requests; send the message again later"
	case agent.CauseUnavailable:
		return prefix + "its model's service is overloaded or failing; send the message again later"
	case agent.CauseTimeout:
		return prefix + "its model gave no complete reply within the time limit; send the message again, or ask for less"
	case agent.CauseTooLarge:
		return prefix + "the request is too large for its model; send less, or start a new conversation (a new contextId)"
	case agent.CauseHistory:
		return prefix + "this conversation's history cannot be sent to its model; start a new conversation (a new contextId)"
	}
	return textAgent
}
