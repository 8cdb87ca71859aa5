// Package conversations is the operator service over the ledger: list, find, show,
// export, replay and verify conversations, and record outbound ones (DESIGN O-1, O-3).
//
// The pure rules that name a conversation (contextId validation and the versioned
// storage key) live in the subpackage contextid, which the ledger also uses.
package conversations
