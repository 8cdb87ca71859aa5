package a2a

import (
	"errors"
	"fmt"
)

// Sentinels of the protocol. Handlers return them (or an [*Error] wrapping one) and the
// transport maps them to JSON-RPC codes through the one table in jsonrpc_errors.go.
var (
	ErrParseError                = errors.New("invalid JSON payload")
	ErrInvalidRequest            = errors.New("request payload validation error")
	ErrMethodNotFound            = errors.New("method not found")
	ErrInvalidParams             = errors.New("invalid parameters")
	ErrInternal                  = errors.New("internal error")
	ErrTaskNotFound              = errors.New("task not found")
	ErrTaskNotCancelable         = errors.New("task cannot be canceled")
	ErrPushNotSupported          = errors.New("push notifications are not supported")
	ErrUnsupportedOperation      = errors.New("this operation is not supported")
	ErrContentTypeNotSupported   = errors.New("incompatible content types")
	ErrInvalidAgentResponse      = errors.New("invalid agent response")
	ErrExtendedCardNotConfigured = errors.New("extended agent card is not configured")
	ErrExtensionSupportRequired  = errors.New("extension support required")
	ErrVersionNotSupported       = errors.New("protocol version not supported")

	// ErrContextBusy: another task is running in the context (gateway policy, one task
	// per contextId). It is an [ErrUnsupportedOperation] with reason CONTEXT_BUSY.
	ErrContextBusy = fmt.Errorf("context busy: %w", ErrUnsupportedOperation)
	// ErrUnavailable: the gateway is shutting down or not ready (-32000, UNAVAILABLE).
	ErrUnavailable = errors.New("service unavailable")
	// ErrRateLimited: the caller exceeded its request rate (-32000, RATE_LIMITED).
	ErrRateLimited = errors.New("rate limit exceeded")
	// ErrLockUnavailable: the lease service is unreachable; turns fail closed
	// (-32603, LOCK_UNAVAILABLE).
	ErrLockUnavailable = fmt.Errorf("lock service unavailable: %w", ErrInternal)
	// ErrStorageUnavailable: the gateway's storage cannot take writes (full, not
	// writable, failing), so nothing of the request was stored; a retry later may pass.
	// It is an [ErrUnavailable] with reason STORAGE_UNAVAILABLE (-32000), as the gateway
	// is not ready (/readyz 503) meanwhile.
	ErrStorageUnavailable = fmt.Errorf("storage unavailable: %w", ErrUnavailable)
	// ErrConversationDamaged: the conversation's stored data is damaged, so the gateway
	// has quarantined it: no turn runs in it and its tasks are not served; the other
	// conversations are (-32603, CONVERSATION_DAMAGED).
	ErrConversationDamaged = fmt.Errorf("conversation damaged: %w", ErrInternal)
)

// Error is a protocol error with detail for the caller: a message that replaces the
// default one, the invalid field (for -32602), and ErrorInfo metadata. Err is the sentinel
// that decides the code.
type Error struct {
	Err      error
	Message  string            // "" = the sentinel's default message
	Field    string            // the offending params field, for ErrInvalidParams
	Metadata map[string]string // ErrorInfo metadata (e.g. contextId, taskId)
}

// Error implements error.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an [*Error] for sentinel with a formatted message shown to the caller.
func Errorf(sentinel error, format string, args ...any) *Error {
	return &Error{Err: sentinel, Message: fmt.Sprintf(format, args...)}
}

// InvalidParams returns an [ErrInvalidParams] error naming field.
func InvalidParams(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return &Error{Err: ErrInvalidParams, Message: msg, Field: field}
}
