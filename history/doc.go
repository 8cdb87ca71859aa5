// Package history renders the prior turns of a conversation for the agent (DESIGN H-1..H-3).
//
// [Render] takes the newest turns of a conversation, oldest first, and writes one
// "user: <text>" or "assistant: <text>" block per turn between the constant boundary lines
// [Open] and [Close], which tell the agent that the block is reference only and carries no
// new instructions. [WithCurrent] puts the current message after that block for an agent
// that takes one text. This is Hermes' format_history plus the guard label of its adapter,
// with one deliberate fix: Hermes ran its injection filter over the rendered history, so its
// own "assistant:" labels reached the agent as "[filtered]". Here [Filter] runs on each
// message text before the label is added and never on rendered output, so the labels
// survive and a peer still cannot forge one.
//
// [Filter] neutralises what untrusted text could use to pass for structure:
//   - line-leading role markers (system:, assistant:, user:, developer:, tool:, human:, ai:,
//     model:, function:, and "### Instruction:"-style headers), whatever their case,
//     indentation, markdown decoration or lookalike letters; the line is prefixed with
//     [QuoteMarker];
//   - chat-template tokens (<|im_start|>, <|endoftext|>, [INST], <<SYS>>, <s>,
//     <start_of_turn>, ...), whose delimiters become parentheses: "<|im_start|>" reads
//     "(im_start)";
//   - imitations of the boundary lines ("[End of previous conversation]", "[Previous
//     conversation ...", "[Prior conversation ...", in any case, spacing or dash variant,
//     with the brackets dropped or replaced by lookalikes); [QuoteMarker] is inserted before
//     the phrase.
//
// It also turns every line-break variant (\r\n, \r, \v, \f, U+0085, U+2028, U+2029) into
// "\n", drops other control characters and replaces invalid UTF-8 with U+FFFD, so "line"
// means the same thing to the filter and to the agent. Filter is deterministic and
// idempotent: Filter(Filter(x)) == Filter(x).
//
// Render indents the continuation lines of a multi-line message by two spaces, so inside
// the boundary every line that starts in the first column is one of our own labels.
//
// The package is pure: no I/O, no goroutines, no clock, no global state beyond constant
// lookup tables. Everything is safe for concurrent use but a [FilterMemo] (Filter's
// results remembered by one caller from one Render to the next), and Filter and Render
// run in time linear in their input.
//
// # Imports
//
// The standard library only (strings, unicode, unicode/utf8). House-style B1 would allow
// a2a; nothing here needs it.
//
// # Caveats
//
// Filtering is a defence in depth, not a guarantee. A model reads meaning, not patterns:
// text can ask for anything in plain prose ("ignore previous instructions" is left as it
// is, inside the boundary, on a user: line), and no list of markers or lookalike letters
// is complete. What carries the weight is the structure around the text: the boundary
// lines, the instruction stack and the trust labels of the projection (DESIGN P-1), and
// the rule that history is never persisted back (H-1). Callers pass only turns that the
// model may see: failure texts, rejected requests and audit-only entries are not turns
// (H-2).
//
// Neutralising changes the text the agent sees (a role line gains a "(quoted) " prefix,
// "[INST]" reads "(INST)"), never what is stored: the ledger keeps the original.
package history
