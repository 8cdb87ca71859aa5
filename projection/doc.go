// Package projection turns a conversation's ledger entries plus policy into what an agent
// is given for a turn: a provider-neutral [Request] (instruction stack, trust-tagged
// messages, the current message last) and its mappings to provider wire formats
// (DESIGN P-1..P-4, H-2, H-3; seeds 000 and 004).
//
// [Build] is the projector. The caller converts ledger entries to [Item]s (this package
// does not import the ledger) and passes the [Policy] from its configuration and the
// authenticated peer. Build
//
//   - allowlists: only MODEL_VISIBLE user messages, agent replies, tool calls and tool
//     results are projected; status, error and audit entries (failure texts, rejected
//     requests) never reach a model;
//   - builds the instruction stack as Request.System, labelled in order of precedence:
//     platform policy ([DefaultPlatformPolicy] unless configured) > operator policy >
//     peer framing (the authenticated peer, whose messages are untrusted data), with a
//     note that earlier turns are reference only;
//   - cleans every message text: history.Filter first (role lines, chat-template tokens,
//     boundary imitations), then imitations of our trust tags are neutralised and
//     credentials are redacted ([redact.Text]), so labels added afterwards are ours;
//   - keeps every section within its token [Budget]: first by compacting in place
//     (old tool results become a placeholder naming their size and artifact, long
//     messages are cut), then by dropping the oldest turns behind one marker message,
//     both by rules chosen so that the request prefix stays byte-stable turn over turn
//     (see Build);
//   - repairs tool traffic so that every tool call is answered right after it;
//   - with Policy.Memory (issue #38), sets Budget.Memory aside once turns drop, moves the
//     drop boundary in coarse blocks, and shows the memory of the dropped turns
//     ([Memory]: facts with their evidence ids, trust MODEL_GENERATED, reference only)
//     before the drop marker. [NewPlan] decides the window and boundary first, so the
//     caller can choose the snapshot for that boundary and render it ([Plan.Request])
//     without building twice.
//
// The mappers encode a Request: [Request.OpenAI] (Chat Completions),
// [Request.Anthropic] (Messages API, with tool_use/tool_result pairing enforced by
// [Request.Validate] before anything is sent) and [Request.Text] (one text under the
// history boundary for exec, echo and A2A relay agents). [Message.TaggedContent] is the
// content with its trust tag, as the mappers send it.
//
// Everything is deterministic (P-4): no clock, no randomness, no map iteration into
// output; the same items and policy give byte-identical bodies, so a replay shows
// exactly what the agent saw. Everything is safe for concurrent use, but a [Memo]: what a
// conversation's plans made (items' forms, the memory section, filtered texts), kept from
// one turn to the next by one caller at a time ([NewPlanMemo], [Request.TextWith]); a plan
// with a memo is the plan without one, byte for byte.
//
// # Imports
//
// history (pure) and the standard library; no I/O, no goroutines, no time.
//
// # Caveats
//
// The token estimate is approximate: [EstimateTokens] counts one token per four bytes,
// which real tokenizers exceed for code, JSON and non-Latin scripts; leave headroom.
//
// Redaction is pattern-based: it catches the credential formats [redact.Text] lists, not a
// secret in an unknown format, split across messages or encoded (JSON \u escapes,
// base64). Tool-call arguments are redacted but not filtered (filtering would break
// their JSON).
//
// Filtering and tags are a defence in depth, not a guarantee: a model reads meaning,
// and a peer can still ask for anything in plain prose. What carries the weight is the
// structure: roles, the instruction stack, the trust tags and the boundary.
//
// Prefix stability has three documented breaks: the request where compaction switches
// on, a drop (once per block of seqs; with memory on the memory section changes in the
// same request), and a current message too long for the history
// cap or longer than 1,024 bytes under compaction, which is shown shorter once it is
// history.
package projection
