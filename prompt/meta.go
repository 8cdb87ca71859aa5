package prompt

import (
	"encoding/json"

	"github.com/a2a-gateway/gateway/ledger"
)

// metaString is the string at key of an entry's metadata ("" if absent or not a string).
func metaString(e *ledger.Entry, key string) string {
	if len(e.Metadata) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(e.Metadata, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}
