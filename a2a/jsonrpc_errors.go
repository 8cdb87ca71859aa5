package a2a

import (
	"encoding/json"
	"errors"
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
	grpc    int    // the gRPC status code (google.golang.org/grpc/codes numbering)
}

// gRPC status codes of the table's grpc column, numbered as google.golang.org/grpc/codes
// (stable by the gRPC specification), so this package needs no gRPC import.
const (
	grpcInvalidArgument    = 3
	grpcNotFound           = 5
	grpcResourceExhausted  = 8
	grpcFailedPrecondition = 9
	grpcUnimplemented      = 12
	grpcInternal           = 13
	grpcUnavailable        = 14
	grpcDataLoss           = 15
)

// errorTable is the only mapping from errors to JSON-RPC codes and gRPC status codes. It
// is append-only in meaning: never renumber a code or reuse a reason. Rows are tried in
// order, so the gateway's specific reasons come before the spec sentinel they wrap. The
// gRPC column is the specification's §5.4 table for its rows (the 1.0 TCK checks it);
// for the gateway's own reasons: a busy context is FAILED_PRECONDITION (retry once the
// running task ends, as for a non-empty rmdir), the unavailable ones UNAVAILABLE, the rate
// limit RESOURCE_EXHAUSTED, a quarantined conversation DATA_LOSS; the JSON-RPC standard
// errors are INVALID_ARGUMENT, UNIMPLEMENTED (unknown method) and INTERNAL.
var errorTable = []errorRow{
	{ErrContextBusy, -32004, "CONTEXT_BUSY", GatewayErrorDomain, "another task is running in this context; retry when it completes", grpcFailedPrecondition},
	{ErrLockUnavailable, -32603, "LOCK_UNAVAILABLE", GatewayErrorDomain, "lock service unavailable; retry later", grpcUnavailable},
	{ErrStorageUnavailable, -32000, "STORAGE_UNAVAILABLE", GatewayErrorDomain, "the gateway's storage cannot take writes; retry later", grpcUnavailable},
	{ErrConversationDamaged, -32603, "CONVERSATION_DAMAGED", GatewayErrorDomain, "the conversation's stored data is damaged; it is quarantined", grpcDataLoss},
	{ErrUnavailable, -32000, "UNAVAILABLE", GatewayErrorDomain, "service unavailable; retry later", grpcUnavailable},
	{ErrRateLimited, -32000, "RATE_LIMITED", GatewayErrorDomain, "rate limit exceeded; retry later", grpcResourceExhausted},
	{ErrParseError, -32700, "PARSE_ERROR", ErrorDomain, "Invalid JSON payload", grpcInvalidArgument},
	{ErrInvalidRequest, -32600, "INVALID_REQUEST", ErrorDomain, "Request payload validation error", grpcInvalidArgument},
	{ErrMethodNotFound, -32601, "METHOD_NOT_FOUND", ErrorDomain, "Method not found", grpcUnimplemented},
	{ErrInvalidParams, -32602, "INVALID_PARAMS", ErrorDomain, "Invalid parameters", grpcInvalidArgument},
	{ErrTaskNotFound, -32001, "TASK_NOT_FOUND", ErrorDomain, "Task not found", grpcNotFound},
	{ErrTaskNotCancelable, -32002, "TASK_NOT_CANCELABLE", ErrorDomain, "Task cannot be canceled", grpcFailedPrecondition},
	{ErrPushNotSupported, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", ErrorDomain, "Push Notification is not supported", grpcUnimplemented},
	{ErrUnsupportedOperation, -32004, "UNSUPPORTED_OPERATION", ErrorDomain, "This operation is not supported", grpcUnimplemented},
	{ErrContentTypeNotSupported, -32005, "CONTENT_TYPE_NOT_SUPPORTED", ErrorDomain, "Incompatible content types", grpcInvalidArgument},
	{ErrInvalidAgentResponse, -32006, "INVALID_AGENT_RESPONSE", ErrorDomain, "Invalid agent response", grpcInternal},
	{ErrExtendedCardNotConfigured, -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", ErrorDomain, "Extended agent card is not configured", grpcFailedPrecondition},
	{ErrExtensionSupportRequired, -32008, "EXTENSION_SUPPORT_REQUIRED", ErrorDomain, "Extension support required", grpcFailedPrecondition},
	{ErrVersionNotSupported, -32009, "VERSION_NOT_SUPPORTED", ErrorDomain, "Protocol version not supported", grpcUnimplemented},
	{ErrInternal, -32603, "INTERNAL", ErrorDomain, "internal error", grpcInternal},
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
	GRPCCode int    // the gRPC status code of the gRPC binding (codes numbering)
}

// ToRPCError maps err to its wire form through the error table. Unknown errors become
// -32603 "internal error" with Internal set, so the caller logs the detail.
func ToRPCError(err error) RPCError {
	row, ok := lookupRow(err)
	if !ok {
		return RPCError{Code: internalRow.code, Message: internalRow.message, Reason: internalRow.reason, Domain: internalRow.domain, Internal: true, GRPCCode: internalRow.grpc}
	}
	out := RPCError{Code: row.code, Message: row.message, Reason: row.reason, Domain: row.domain, GRPCCode: row.grpc}
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
	return map[string]any{"code": e.Code, "message": e.Message, "data": data}
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
