package a2a

import (
	"encoding/json"
	"errors"
	"net/http"
)

// ErrorDomain is the ErrorInfo domain of errors defined by the A2A specification.
const ErrorDomain = "a2a-protocol.org"

// GatewayErrorDomain is the ErrorInfo domain of the gateway's own reasons (CONTEXT_BUSY ...).
const GatewayErrorDomain = "a2a-gateway"

// errorRow is one row of the error table.
type errorRow struct {
	err     error
	code    int
	reason  string
	domain  string
	message string // the default message on the wire
	// grpc is the google.rpc.Code (the gRPC binding's status, and the "status" name of an
	// HTTP+JSON error body); http is the HTTP+JSON binding's status code.
	grpc rpcCode
	http int
}

// rpcCode is a google.rpc.Code, numbered as google.golang.org/grpc/codes (stable by the
// gRPC specification), so this package needs no gRPC import.
type rpcCode int

const (
	codeInvalidArgument    rpcCode = 3
	codeNotFound           rpcCode = 5
	codeResourceExhausted  rpcCode = 8
	codeFailedPrecondition rpcCode = 9
	codeAborted            rpcCode = 10
	codeUnimplemented      rpcCode = 12
	codeInternal           rpcCode = 13
	codeUnavailable        rpcCode = 14
	codeDataLoss           rpcCode = 15
)

// String is the code's name as google.rpc.Code spells it.
func (c rpcCode) String() string {
	switch c {
	case codeInvalidArgument:
		return "INVALID_ARGUMENT"
	case codeNotFound:
		return "NOT_FOUND"
	case codeResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codeFailedPrecondition:
		return "FAILED_PRECONDITION"
	case codeAborted:
		return "ABORTED"
	case codeUnimplemented:
		return "UNIMPLEMENTED"
	case codeUnavailable:
		return "UNAVAILABLE"
	case codeDataLoss:
		return "DATA_LOSS"
	}
	return "INTERNAL"
}

// errorTable is the only mapping from errors to their wire forms: the JSON-RPC code, the
// google.rpc.Code (gRPC status; the HTTP+JSON body's "status") and the HTTP+JSON status,
// as v1.0 §5.4 maps the A2A errors (the 1.0 TCK checks the gRPC and HTTP columns). It is
// append-only in meaning: never renumber a code or reuse a reason. Rows are tried in
// order, so the gateway's specific reasons come before the spec sentinel they wrap.
//
// The gateway's own reasons: a busy context is ABORTED / 409 (a concurrency conflict:
// retry once the running task ends), the unavailable ones UNAVAILABLE / 503, the rate
// limit RESOURCE_EXHAUSTED / 429, a quarantined conversation DATA_LOSS / 500; the
// JSON-RPC standard errors are INVALID_ARGUMENT / 400, UNIMPLEMENTED / 404 (an unknown
// method: the REST binding has no such route) and INTERNAL / 500.
var errorTable = []errorRow{
	{ErrContextBusy, -32004, "CONTEXT_BUSY", GatewayErrorDomain, "another task is running in this context; retry when it completes", codeAborted, http.StatusConflict},
	{ErrLockUnavailable, -32603, "LOCK_UNAVAILABLE", GatewayErrorDomain, "lock service unavailable; retry later", codeUnavailable, http.StatusServiceUnavailable},
	{ErrStorageUnavailable, -32000, "STORAGE_UNAVAILABLE", GatewayErrorDomain, "the gateway's storage cannot take writes; retry later", codeUnavailable, http.StatusServiceUnavailable},
	{ErrConversationDamaged, -32603, "CONVERSATION_DAMAGED", GatewayErrorDomain, "the conversation's stored data is damaged; it is quarantined", codeDataLoss, http.StatusInternalServerError},
	{ErrUnavailable, -32000, "UNAVAILABLE", GatewayErrorDomain, "service unavailable; retry later", codeUnavailable, http.StatusServiceUnavailable},
	{ErrRateLimited, -32000, "RATE_LIMITED", GatewayErrorDomain, "rate limit exceeded; retry later", codeResourceExhausted, http.StatusTooManyRequests},
	{ErrParseError, -32700, "PARSE_ERROR", ErrorDomain, "Invalid JSON payload", codeInvalidArgument, http.StatusBadRequest},
	{ErrInvalidRequest, -32600, "INVALID_REQUEST", ErrorDomain, "Request payload validation error", codeInvalidArgument, http.StatusBadRequest},
	{ErrMethodNotFound, -32601, "METHOD_NOT_FOUND", ErrorDomain, "Method not found", codeUnimplemented, http.StatusNotFound},
	{ErrInvalidParams, -32602, "INVALID_PARAMS", ErrorDomain, "Invalid parameters", codeInvalidArgument, http.StatusBadRequest},
	{ErrTaskNotFound, -32001, "TASK_NOT_FOUND", ErrorDomain, "Task not found", codeNotFound, http.StatusNotFound},
	{ErrTaskNotCancelable, -32002, "TASK_NOT_CANCELABLE", ErrorDomain, "Task cannot be canceled", codeFailedPrecondition, http.StatusConflict},
	{ErrPushNotSupported, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", ErrorDomain, "Push Notification is not supported", codeUnimplemented, http.StatusBadRequest},
	{ErrUnsupportedOperation, -32004, "UNSUPPORTED_OPERATION", ErrorDomain, "This operation is not supported", codeUnimplemented, http.StatusBadRequest},
	{ErrContentTypeNotSupported, -32005, "CONTENT_TYPE_NOT_SUPPORTED", ErrorDomain, "Incompatible content types", codeInvalidArgument, http.StatusUnsupportedMediaType},
	{ErrInvalidAgentResponse, -32006, "INVALID_AGENT_RESPONSE", ErrorDomain, "Invalid agent response", codeInternal, http.StatusBadGateway},
	{ErrExtendedCardNotConfigured, -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", ErrorDomain, "Extended agent card is not configured", codeFailedPrecondition, http.StatusBadRequest},
	{ErrExtensionSupportRequired, -32008, "EXTENSION_SUPPORT_REQUIRED", ErrorDomain, "Extension support required", codeFailedPrecondition, http.StatusBadRequest},
	{ErrVersionNotSupported, -32009, "VERSION_NOT_SUPPORTED", ErrorDomain, "Protocol version not supported", codeUnimplemented, http.StatusBadRequest},
	{ErrInternal, -32603, "INTERNAL", ErrorDomain, "internal error", codeInternal, http.StatusInternalServerError},
}

var internalRow = errorTable[len(errorTable)-1]

// RPCError is a JSON-RPC error object as it goes on the wire, before dialect encoding.
type RPCError struct {
	Code     int
	Message  string
	Reason   string
	Domain   string
	Metadata map[string]string
	Field    string // BadRequest field violation, for -32602
	Internal bool   // the cause was not a protocol error; log it, do not send it
	// GRPCCode is the google.rpc.Code (the gRPC binding's status code), Status its name
	// (the HTTP+JSON body's "status"), HTTPStatus the HTTP+JSON binding's status code: all
	// from the error table.
	GRPCCode   int
	Status     string
	HTTPStatus int
}

// ToRPCError maps err to its wire form through the error table. Unknown errors become
// -32603 "internal error" with Internal set, so the caller logs the detail.
func ToRPCError(err error) RPCError {
	row, ok := lookupRow(err)
	if !ok {
		return internalRow.wire(true)
	}
	out := row.wire(false)
	if row.err == ErrInternal {
		out.Internal = true
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Message != "" {
			out.Message = e.Message
		}
		out.Field = e.Field
		out.Metadata = e.Metadata
	}
	return out
}

// wire is the row's RPCError before the error's own message, field and metadata.
func (r errorRow) wire(internal bool) RPCError {
	return RPCError{Code: r.code, Message: r.message, Reason: r.reason, Domain: r.domain, Internal: internal,
		GRPCCode: int(r.grpc), Status: r.grpc.String(), HTTPStatus: r.http}
}

func lookupRow(err error) (errorRow, bool) {
	for _, r := range errorTable {
		if errors.Is(err, r.err) {
			return r, true
		}
	}
	return errorRow{}, false
}

// CodeOf returns the JSON-RPC code err maps to.
func CodeOf(err error) int { return ToRPCError(err).Code }

// wireErrorV03 encodes e for the v0.3 dialect: data is an object with the reason.
func (e RPCError) wireV03() map[string]any {
	m := map[string]any{"code": e.Code, "message": e.Message}
	if e.Reason != "" && !e.Internal {
		data := map[string]any{"reason": e.Reason, "domain": e.Domain}
		if len(e.Metadata) > 0 {
			data["metadata"] = e.Metadata
		}
		if e.Field != "" {
			data["field"] = e.Field
		}
		m["data"] = data
	}
	return m
}

// wireV1 encodes e for the v1.0 dialect: data is an array of typed details, the first a
// google.rpc.ErrorInfo, then a google.rpc.BadRequest for a field violation.
func (e RPCError) wireV1() map[string]any {
	return map[string]any{"code": e.Code, "message": e.Message, "data": e.details()}
}

// details are the typed details of a v1.0 error: a google.rpc.ErrorInfo, then a
// google.rpc.BadRequest for a field violation (JSON-RPC error.data, gRPC status details,
// HTTP+JSON error.details alike).
func (e RPCError) details() []any {
	info := map[string]any{
		"@type":  "type.googleapis.com/google.rpc.ErrorInfo",
		"reason": e.Reason,
		"domain": e.Domain,
	}
	if len(e.Metadata) > 0 && !e.Internal {
		info["metadata"] = e.Metadata
	}
	data := []any{info}
	if e.Field != "" {
		data = append(data, map[string]any{
			"@type":           "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []any{map[string]any{"field": e.Field, "description": e.Message}},
		})
	}
	return data
}

// HTTPBody is the error as the HTTP+JSON binding sends it (v1.0 §11.6, AIP-193):
// {"error": {"code": <HTTP status>, "status": <google.rpc.Code>, "message", "details"}}.
func (e RPCError) HTTPBody() []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{ // maps of strings and ints always marshal
		"code": e.HTTPStatus, "status": e.Status, "message": e.Message, "details": e.details(),
	}})
	return b
}

func (e RPCError) wire(d Dialect) json.RawMessage {
	var v any
	if d == V1 {
		v = e.wireV1()
	} else {
		v = e.wireV03()
	}
	b, _ := json.Marshal(v) // maps of strings and ints always marshal
	return b
}

// SentinelFor is the inverse of [ToRPCError] for an error object read from the wire: the
// sentinel of the table row with both code and reason, else of the specification's row
// for code (so -32004 with reason CONTEXT_BUSY is [ErrContextBusy], -32001 is
// [ErrTaskNotFound]). It returns nil for a code the table does not know.
func SentinelFor(code int, reason string) error {
	if reason != "" {
		for _, r := range errorTable {
			if r.code == code && r.reason == reason {
				return r.err
			}
		}
	}
	for _, r := range errorTable {
		if r.code == code && r.domain == ErrorDomain {
			return r.err
		}
	}
	return nil
}
