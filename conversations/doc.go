// Package conversations holds the pure rules that identify a conversation: contextId
// validation (DESIGN D-1), the versioned SHA-256 storage key (D-2) and id generation.
//
// It does no I/O, so adapters (the ledger) may import it as the one agreed exception to
// "adapters do not import each other".
//
// # Imports
//
// Standard library and google/uuid only.
package conversations
