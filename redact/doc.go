// Package redact removes credentials from text (DESIGN X-3): [Text] redacts a whole text,
// [Stream] redacts a text that arrives in chunks (an agent's reply streamed token by token)
// with the same result. Every byte the gateway stores, streams or sends to a model goes
// through one of them first: projection redacts what reaches a model (P-1), turn what the
// ledger stores and the streams send.
//
// A credential becomes a placeholder naming its kind, "[redacted:<kind>]" (see [Prefix]).
// Invisible characters (Unicode Default_Ignorable_Code_Point and category Cf: zero-width
// space, joiners, soft hyphen, BOM, the combining grapheme joiner, variation selectors,
// Hangul fillers, tags) cannot hide a credential: Text and Stream drop a run of them
// between two printable ASCII characters before matching. [Texts] redacts the parts of one message as one text, so a
// credential split across parts is found too.
// The package is pure: no I/O, no project imports.
package redact
