// Package logctx carries the request scope of log lines in a context: a logger
// ([With], [From]) and the attributes that name the request ([WithAttrs]: request_id,
// method, context_id, task_id). [NewHandler] wraps a slog.Handler so that every record
// logged with such a context (the slog ...Context calls) carries those attributes, so
// the packages below the transport tie their lines to a request just by logging with
// ctx; they need not import this package unless they add an attribute of their own.
//
// The pattern is a2a-go's log package (a logger under a private key in the context).
//
// # Imports
//
// The standard library only: every layer of the gateway may import it.
//
// # Caveats
//
// The attributes go into the record at the handler's level: a logger derived with
// WithGroup puts them inside its group. A key the record (or the logger, through With)
// already has is not repeated.
package logctx
