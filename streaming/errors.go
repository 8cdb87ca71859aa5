package streaming

import "errors"

// ErrClosed is the cause (context.Cause) of the context of every call and stream of a
// connection that has closed.
var ErrClosed = errors.New("websocket connection closed")
