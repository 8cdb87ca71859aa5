package otlpwire

import (
	"math"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/encoding/protowire"
)

// begin starts the length-delimited field f and returns where its content starts; end
// writes the length. One byte is reserved for the length, and the content is moved up
// when it needs more (past 127 bytes): canonical varints, no sizing pass.
func (e *encoder) begin(f protowire.Number) int {
	e.b = protowire.AppendTag(e.b, f, protowire.BytesType)
	e.b = append(e.b, 0)
	return len(e.b)
}

func (e *encoder) end(start int) {
	n := len(e.b) - start
	if n < 0x80 {
		e.b[start-1] = byte(n)
		return
	}
	extra := protowire.SizeVarint(uint64(n)) - 1
	e.b = slices.Grow(e.b, extra)[:len(e.b)+extra]
	copy(e.b[start+extra:], e.b[start:start+n])
	protowire.AppendVarint(e.b[:start-1], uint64(n)) // within capacity: writes in place
}

// str writes a string field, omitted when empty (proto3).
func (e *encoder) str(f protowire.Number, s string) {
	if s == "" {
		return
	}
	e.b = protowire.AppendTag(e.b, f, protowire.BytesType)
	e.b = protowire.AppendString(e.b, s)
}

// bytes writes a bytes field, omitted when empty (proto3).
func (e *encoder) bytes(f protowire.Number, v []byte) {
	if len(v) == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, f, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, v)
}

// uint writes a varint field, omitted when zero (proto3).
func (e *encoder) uint(f protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, f, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, v)
}

// time writes a fixed64 Unix-nanosecond field; a time before 1970 is 0, omitted.
func (e *encoder) time(f protowire.Number, unixNano int64) {
	if unixNano <= 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, f, protowire.Fixed64Type)
	e.b = protowire.AppendFixed64(e.b, uint64(unixNano))
}

func (e *encoder) fixed32(f protowire.Number, v uint32) {
	if v == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, f, protowire.Fixed32Type)
	e.b = protowire.AppendFixed32(e.b, v)
}

// iter writes each attribute of it as a KeyValue in field f.
func (e *encoder) iter(f protowire.Number, it attribute.Iterator) {
	for it.Next() {
		e.keyValue(f, it.Attribute())
	}
}

// keyValue writes kv as a common/v1 KeyValue in field f. The value is always present,
// empty for an EMPTY attribute, as the SDK's exporter writes it.
func (e *encoder) keyValue(f protowire.Number, kv attribute.KeyValue) {
	m := e.begin(f)
	e.str(fKeyValueKey, string(kv.Key))
	v := e.begin(fKeyValueValue)
	e.anyValue(kv.Value)
	e.end(v)
	e.end(m)
}

// anyValue writes the content of an AnyValue: one member of its oneof, written even
// when zero (a oneof member has presence). An unknown type is the string "INVALID",
// as in the SDK's exporter.
func (e *encoder) anyValue(v attribute.Value) {
	switch v.Type() {
	case attribute.EMPTY:
	case attribute.BOOL:
		e.anyBool(v.AsBool())
	case attribute.INT64:
		e.anyInt(v.AsInt64())
	case attribute.FLOAT64:
		e.anyDouble(v.AsFloat64())
	case attribute.STRING:
		e.anyString(v.AsString())
	case attribute.BYTESLICE:
		e.b = protowire.AppendTag(e.b, fAnyBytes, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, v.AsByteSlice())
	case attribute.MAP:
		m := e.begin(fAnyKVList)
		for _, kv := range v.AsMap() {
			e.keyValue(fKVListValues, kv)
		}
		e.end(m)
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE, attribute.SLICE:
		m := e.begin(fAnyArray)
		e.arrayValues(v)
		e.end(m)
	default:
		e.anyString("INVALID")
	}
}

// arrayValues writes the elements of a slice value as ArrayValue.values.
func (e *encoder) arrayValues(v attribute.Value) {
	switch v.Type() {
	case attribute.BOOLSLICE:
		arrayOf(e, v.AsBoolSlice(), (*encoder).anyBool)
	case attribute.INT64SLICE:
		arrayOf(e, v.AsInt64Slice(), (*encoder).anyInt)
	case attribute.FLOAT64SLICE:
		arrayOf(e, v.AsFloat64Slice(), (*encoder).anyDouble)
	case attribute.STRINGSLICE:
		arrayOf(e, v.AsStringSlice(), (*encoder).anyString)
	case attribute.SLICE:
		arrayOf(e, v.AsSlice(), (*encoder).anyValue)
	}
}

// arrayOf writes each of xs as one ArrayValue.values element, its AnyValue written by put.
func arrayOf[T any](e *encoder, xs []T, put func(*encoder, T)) {
	for _, x := range xs {
		m := e.begin(fArrayValues)
		put(e, x)
		e.end(m)
	}
}

// anyBool writes an AnyValue's bool_value.
func (e *encoder) anyBool(x bool) {
	e.b = protowire.AppendTag(e.b, fAnyBool, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(x))
}

func (e *encoder) anyInt(x int64) {
	e.b = protowire.AppendTag(e.b, fAnyInt, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, uint64(x))
}

func (e *encoder) anyDouble(x float64) {
	e.b = protowire.AppendTag(e.b, fAnyDouble, protowire.Fixed64Type)
	e.b = protowire.AppendFixed64(e.b, math.Float64bits(x))
}

func (e *encoder) anyString(s string) {
	e.b = protowire.AppendTag(e.b, fAnyString, protowire.BytesType)
	e.b = protowire.AppendString(e.b, s)
}
