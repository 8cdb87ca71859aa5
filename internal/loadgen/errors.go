package loadgen

import "errors"

// ErrInvalidConfig is wrapped by every error that [Config.Validate], [Run] and
// [Compare] return for a configuration they cannot run.
var ErrInvalidConfig = errors.New("invalid config")

// Keys of [Report.ErrorsByCode] for failures that carry no JSON-RPC code.
// JSON-RPC errors are keyed by their decimal code, such as "-32004", and
// non-200 HTTP answers by "http <status>", such as "http 503".
const (
	// ErrKeyTransport counts requests that failed below HTTP: refused or
	// reset connections, broken streams.
	ErrKeyTransport = "transport"
	// ErrKeyTimeout counts requests that did not finish within
	// [Config.Timeout].
	ErrKeyTimeout = "timeout"
	// ErrKeyInvalid counts HTTP 200 answers that are not a JSON-RPC response
	// with a non-null result or an error, and streams that ended without a
	// single event.
	ErrKeyInvalid = "invalid response"
)
