package main

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP field numbers countSpans follows (opentelemetry-proto, trace/v1 and
// collector/trace/v1).
const (
	fieldResourceSpans = 1 // ExportTraceServiceRequest.resource_spans
	fieldScopeSpans    = 2 // ResourceSpans.scope_spans
	fieldSpans         = 2 // ScopeSpans.spans
	fieldTraceID       = 1 // Span.trace_id
	fieldSpanID        = 2 // Span.span_id
)

var errMalformed = errors.New("malformed OTLP request")

// countSpans parses an ExportTraceServiceRequest in its wire form and returns how many
// spans it holds; any field that does not parse, or a span without a 16-byte trace id
// and an 8-byte span id, is an error.
func countSpans(b []byte) (int, error) {
	n := 0
	err := eachField(b, func(num protowire.Number, v []byte) error {
		if num != fieldResourceSpans {
			return nil
		}
		return eachField(v, func(num protowire.Number, v []byte) error {
			if num != fieldScopeSpans {
				return nil // the resource, schema_url
			}
			return eachField(v, func(num protowire.Number, v []byte) error {
				if num != fieldSpans {
					return nil // the scope, schema_url
				}
				n++
				return checkSpan(v)
			})
		})
	})
	return n, err
}

// checkSpan walks every field of a span and checks its two ids.
func checkSpan(b []byte) error {
	var trace, span int
	err := eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldTraceID:
			trace = len(v)
		case fieldSpanID:
			span = len(v)
		}
		return nil
	})
	if err == nil && (trace != 16 || span != 8) {
		err = fmt.Errorf("%w: a span with a %d-byte trace id and a %d-byte span id", errMalformed, trace, span)
	}
	return err
}

// eachField calls f with each length-delimited field of the message b (its number and
// bytes) and skips over the others, checking that every field parses.
func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", errMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}
