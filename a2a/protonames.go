package a2a

import (
	"bytes"
	"encoding/json"
	"strings"
)

// protoNames makes the v1.0 dialect accept a params object's top-level fields under
// their Protocol Buffers names as well as their JSON names ("task_id" for "taskId",
// "history_length" for "historyLength"), as the ProtoJSON mapping that defines the
// v1.0 JSON requires of parsers ("Parsers accept both the lowerCamelCase name and the
// original proto field name"). The official TCK's JSON-RPC client sends proto names.
// Only the top level is renamed: nested objects may hold free-form maps (metadata),
// whose keys are data. A field given under both names keeps the JSON name's value.
// The send methods are left alone: none of their top-level fields (tenant, message,
// configuration, metadata) has an underscore, and their params can be a megabyte.
// Params that are not an object, or have no name with an underscore, come back as
// they are.
func protoNames(params json.RawMessage, spec methodSpec) json.RawMessage {
	if spec.dialect != V1 || spec.kind == mSend || spec.kind == mStream || bytes.IndexByte(params, '_') < 0 {
		return params
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return params // not an object: the method's decoder reports it
	}
	renamed := false
	for k, v := range fields {
		if !strings.Contains(k, "_") {
			continue
		}
		camel := lowerCamel(k)
		if _, both := fields[camel]; !both {
			fields[camel] = v
		}
		delete(fields, k)
		renamed = true
	}
	if !renamed {
		return params
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return params
	}
	return out
}

// lowerCamel is protoc's JSON name of a field: "push_notification_config" →
// "pushNotificationConfig".
func lowerCamel(name string) string {
	var b strings.Builder
	up := false
	for _, r := range name {
		switch {
		case r == '_':
			up = true
		case up && 'a' <= r && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			up = false
		default:
			b.WriteRune(r)
			up = false
		}
	}
	return b.String()
}
