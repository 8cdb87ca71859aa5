package agent

import (
	"errors"
	"net/http"
	"strings"
)

// Cause is what a backend's failure means to the peer whose turn failed, when the peer
// could act on it (send again later, send less, start a new conversation). [CauseOf]
// reads it from an error a backend's Reply returned; the gateway says it in the failed
// task's status. A cause names a class of failure, never upstream text, a URL, a model
// or a key.
type Cause int

// The causes. CauseOther is every failure the peer can do nothing about (a refused API
// key, an unreachable or broken upstream, a malformed stream): the operator's log has
// the detail. Do not reorder: add new causes at the end.
const (
	CauseOther       Cause = iota
	CauseRateLimited       // the model's service refused for its rate limit (HTTP 429): send again later
	CauseUnavailable       // the model's service is overloaded or failing (HTTP 5xx, 529): send again later
	CauseTimeout           // no complete reply within the backend's time limit: send again, or ask for less
	CauseTooLarge          // the request is too large for the model (HTTP 413, its context length): send less, or start a new conversation
	CauseHistory           // the conversation's history cannot be sent as a request: start a new conversation
)

// causeError is a backend error with the cause the peer could act on.
type causeError struct {
	cause Cause
	err   error
}

func (e *causeError) Error() string { return e.err.Error() }
func (e *causeError) Unwrap() error { return e.err }

// withCause marks err (a backend error) with cause.
func withCause(cause Cause, err error) error {
	if cause == CauseOther {
		return err
	}
	return &causeError{cause: cause, err: err}
}

// CauseOf returns the cause a backend marked err with; CauseOther for any other error
// (nil included).
func CauseOf(err error) Cause {
	var ce *causeError
	if errors.As(err, &ce) {
		return ce.cause
	}
	return CauseOther
}

// statusCause is the cause of an upstream's refusal with HTTP status code and the start
// of its body (read for the error's code only, never shown).
func statusCause(code int, body []byte) Cause {
	switch {
	case code == http.StatusTooManyRequests:
		return CauseRateLimited
	case code == http.StatusRequestTimeout || code == http.StatusGatewayTimeout:
		return CauseTimeout
	case code == http.StatusRequestEntityTooLarge:
		return CauseTooLarge
	case code == http.StatusBadRequest && contextTooLong(body):
		return CauseTooLarge
	case code >= 500 && code != http.StatusNotImplemented:
		return CauseUnavailable
	}
	return CauseOther
}

// contextTooLong reports whether an upstream's 400 says that the request is over the
// model's context length, as OpenAI ("context_length_exceeded"), Anthropic ("prompt is
// too long") and the common local servers ("maximum context length", "exceeds the
// context") word it.
func contextTooLong(body []byte) bool {
	s := strings.ToLower(string(body))
	for _, m := range []string{"context_length_exceeded", "prompt is too long", "maximum context length", "exceeds the context"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// kindCause is the cause of an error object an upstream sent in a 200 reply or its
// stream, from its type (OpenAI's "type", Anthropic's error.type).
func kindCause(kind string) Cause {
	switch kind {
	case "rate_limit_error":
		return CauseRateLimited
	case "overloaded_error", "api_error", "server_error":
		return CauseUnavailable
	}
	return CauseOther
}
