package otlptest

import commonpb "go.opentelemetry.io/proto/otlp/common/v1"

// attrMap flattens OTLP key-values: strings, ints, doubles and bools as Go values, other
// kinds as their protobuf text.
func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = x.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = x.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = x.BoolValue
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}
