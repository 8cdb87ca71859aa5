package conversations

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2a-gateway/gateway/ledger"
)

// redactedValue replaces a push config's secrets in what Show returns.
const redactedValue = "[redacted]"

// redactPush returns e with the secrets of a push entry (the receiver's token and
// credentials) replaced: Show is for reading, and a webhook's credentials are not the
// operator's to read back. Other entries are returned as they are. (Export keeps the
// entries as stored, byte for byte, so that they verify.)
func redactPush(e ledger.Entry) ledger.Entry {
	var m map[string]any
	if (e.Kind != ledger.KindPushConfig && e.Kind != ledger.KindPushOutbox) || json.Unmarshal(e.Metadata, &m) != nil {
		return e
	}
	for _, k := range []string{"token", "authCredentials"} {
		if v, ok := m[k].(string); ok && v != "" {
			m[k] = redactedValue
		}
	}
	if b, err := json.Marshal(m); err == nil {
		e.Metadata = b
	}
	return e
}

// PushText says what a push entry records, in one line (and "" for other entries):
// "set c1 → https://… (1.0)", "queued event E for config c1 → https://…",
// "attempt 2 of event E: delivered, HTTP 204 in 3.1 ms".
func PushText(e *ledger.Entry) string {
	switch e.Kind {
	case ledger.KindPushConfig:
		var c ledger.PushConfig
		if ledger.PushRecord(e, &c) != nil {
			return ""
		}
		if c.Deleted {
			return "deleted " + c.ID
		}
		return fmt.Sprintf("set %s → %s (%s)", c.ID, c.URL, c.Dialect)
	case ledger.KindPushOutbox:
		var o ledger.PushOutbox
		if ledger.PushRecord(e, &o) != nil {
			return ""
		}
		return fmt.Sprintf("queued event %s for config %s → %s", e.ID, o.ConfigID, o.URL)
	case ledger.KindPushAttempt:
		return attemptText(e)
	}
	return ""
}

func attemptText(e *ledger.Entry) string {
	var a ledger.PushAttempt
	if ledger.PushRecord(e, &a) != nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d of event %s: %s", a.Attempt, a.EventID, a.Outcome)
	if a.Status != 0 {
		fmt.Fprintf(&b, ", HTTP %d", a.Status)
	}
	fmt.Fprintf(&b, " in %.1f ms", a.LatencyMs)
	if a.Error != "" {
		b.WriteString(": " + a.Error)
	}
	if !a.Final && !a.NextAt.IsZero() {
		b.WriteString("; next at " + a.NextAt.UTC().Format("15:04:05Z"))
	}
	return b.String()
}
