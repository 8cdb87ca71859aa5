// Package conversations is the operator service over the ledger (DESIGN O-1, O-3):
// list, find, show, export, replay and verify conversations, and record outbound ones
// with the same validation and the same credential redaction as turns. The admin
// API and both modes of the `gateway conversations` and `gateway send` commands call it;
// they only parse and print.
//
// Errors are typed, so that each edge maps them in one place: [*NotFoundError]
// ([ErrNotFound]), [*AmbiguousError] ([ErrAmbiguous], with the candidate owners as
// values), [*FieldError] ([ErrInvalid], field and reason as values).
//
// Find never reads the conversations it does not return: with an owner it looks up the
// derived key; without, the ledger's lookup by contextId (ledger/byid.go: its by-contextId
// index, and in format 2 its owners list, one head read per owner).
//
// The pure rules that name a conversation (contextId validation and the versioned
// storage key) live in the subpackage contextid, which the ledger also uses.
//
// # Imports
//
// ledger (declared on this side as [Ledger]), prompt (the agent's input, shared with the
// turn runner), projection (redaction), peers (owner names), a2a (task states),
// contextid. Never turn: the service and the runner are siblings.
package conversations
