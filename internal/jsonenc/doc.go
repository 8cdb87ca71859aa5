// Package jsonenc appends JSON to byte slices exactly as encoding/json writes it, without
// reflection: strings (with HTML escaping, as json.Marshal does) and raw JSON values
// (compacted and HTML-escaped, as json.Marshal writes a json.RawMessage), and the
// omitempty forms of both. The hand-written encoders of the protocol's wire types (a2a)
// and of the ledger's entries (ledger, whose hashes cover the encoding) share them, so
// that the ledger does not import the protocol layer for them. Their tests compare them
// with json.Marshal; a2a's FuzzWireEncoding and ledger's FuzzAppendEntryJSON fuzz them
// through the encoders. FirstInvalidUTF8 finds the byte where a request body stops being
// UTF-8, and CheckText also the first lone surrogate escape (\ud800): decoders check
// them before encoding/json replaces either with U+FFFD.
//
// # Imports
//
// Standard library only.
package jsonenc
