// Package projection turns a conversation's ledger entries plus policy into what an agent
// is given for a turn: a provider-neutral [Request] (instruction stack, trust-tagged
// messages, the current message last) and its mappings to provider wire formats.
//
// # Imports
//
// history (pure) and the standard library; no I/O.
package projection
