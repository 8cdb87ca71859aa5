package projection

// Validate checks that r can be sent to any provider (DESIGN P-2): every message has a
// known role; only assistant messages have tool calls and only tool messages a
// ToolCallID; tool-call ids are non-empty and unique; every assistant message with tool
// calls is followed directly by one tool message per call answering it (in any order);
// and every tool message answers a call of the assistant message right before its run of
// tool messages. It returns nil or an error wrapping [ErrInvalid] (roles, fields, ids)
// or [ErrToolPairing] (a call without its result, a result without its call). Requests
// made by [Build] always pass. The mappers call it before they encode anything.
func (r Request) Validate() error {
	seen := make(map[string]bool) // lookups only; never iterated
	for i := 0; i < len(r.Messages); {
		ai, m := i, &r.Messages[i]
		switch m.Role {
		case RoleUser, RoleAssistant, RoleTool:
		default:
			return invalid("message %d: unknown role %q", i, m.Role)
		}
		if m.Role != RoleAssistant && len(m.ToolCalls) > 0 {
			return invalid("message %d: a %s message with tool calls", i, m.Role)
		}
		if m.Role != RoleTool && m.ToolCallID != "" {
			return invalid("message %d: a %s message with a tool call id", i, m.Role)
		}
		if m.Role == RoleTool {
			return unpaired("message %d: tool result for call %q does not follow that call", i, m.ToolCallID)
		}
		i++
		if len(m.ToolCalls) == 0 {
			continue
		}
		pending := make(map[string]bool, len(m.ToolCalls)) // lookups only
		for _, c := range m.ToolCalls {
			switch {
			case c.ID == "":
				return invalid("message %d: tool call %q without an id", ai, c.Name)
			case seen[c.ID]:
				return invalid("message %d: tool call id %q used twice", ai, c.ID)
			}
			seen[c.ID] = true
			pending[c.ID] = true
		}
		for ; i < len(r.Messages) && r.Messages[i].Role == RoleTool; i++ {
			t := &r.Messages[i]
			if len(t.ToolCalls) > 0 {
				return invalid("message %d: a tool message with tool calls", i)
			}
			if !pending[t.ToolCallID] {
				return unpaired("message %d: tool result for call %q answers no call of message %d", i, t.ToolCallID, ai)
			}
			delete(pending, t.ToolCallID)
		}
		// Report the first unanswered call in the message's order, not the map's.
		for _, c := range m.ToolCalls {
			if pending[c.ID] {
				return unpaired("message %d: tool call %q (%s) has no result right after it", ai, c.ID, c.Name)
			}
		}
	}
	return nil
}
