package otlpwire

import (
	"math"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the OTLP messages written here (opentelemetry-proto,
// collector/trace/v1, trace/v1, common/v1, resource/v1).
const (
	fRequestResourceSpans protowire.Number = 1 // ExportTraceServiceRequest.resource_spans

	fResourceSpansResource   protowire.Number = 1
	fResourceSpansScopeSpans protowire.Number = 2
	fResourceSpansSchemaURL  protowire.Number = 3
	fResourceAttributes      protowire.Number = 1

	fScopeSpansScope     protowire.Number = 1
	fScopeSpansSpans     protowire.Number = 2
	fScopeSpansSchemaURL protowire.Number = 3
	fScopeName           protowire.Number = 1
	fScopeVersion        protowire.Number = 2
	fScopeAttributes     protowire.Number = 3

	fSpanTraceID           protowire.Number = 1
	fSpanSpanID            protowire.Number = 2
	fSpanTraceState        protowire.Number = 3
	fSpanParentSpanID      protowire.Number = 4
	fSpanName              protowire.Number = 5
	fSpanKind              protowire.Number = 6
	fSpanStartTime         protowire.Number = 7
	fSpanEndTime           protowire.Number = 8
	fSpanAttributes        protowire.Number = 9
	fSpanDroppedAttributes protowire.Number = 10
	fSpanEvents            protowire.Number = 11
	fSpanDroppedEvents     protowire.Number = 12
	fSpanLinks             protowire.Number = 13
	fSpanDroppedLinks      protowire.Number = 14
	fSpanStatus            protowire.Number = 15
	fSpanFlags             protowire.Number = 16

	fEventTime              protowire.Number = 1
	fEventName              protowire.Number = 2
	fEventAttributes        protowire.Number = 3
	fEventDroppedAttributes protowire.Number = 4

	fLinkTraceID           protowire.Number = 1
	fLinkSpanID            protowire.Number = 2
	fLinkAttributes        protowire.Number = 4
	fLinkDroppedAttributes protowire.Number = 5
	fLinkFlags             protowire.Number = 6

	fStatusMessage protowire.Number = 2
	fStatusCode    protowire.Number = 3

	fKeyValueKey   protowire.Number = 1
	fKeyValueValue protowire.Number = 2

	fAnyString protowire.Number = 1
	fAnyBool   protowire.Number = 2
	fAnyInt    protowire.Number = 3
	fAnyDouble protowire.Number = 4
	fAnyArray  protowire.Number = 5
	fAnyKVList protowire.Number = 6
	fAnyBytes  protowire.Number = 7

	fArrayValues  protowire.Number = 1 // ArrayValue.values
	fKVListValues protowire.Number = 1 // KeyValueList.values
)

// Span flags of trace/v1 SpanFlags: the low 8 bits are the W3C trace flags.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// encoder writes one ExportTraceServiceRequest into b. Its slices are kept between
// exports (reset, not freed), so that a steady stream of batches allocates nothing here.
type encoder struct {
	b      []byte
	groups []resourceGroup
}

// resourceGroup is one ResourceSpans: the spans of one resource, by scope in the order
// the scopes were first seen.
type resourceGroup struct {
	res    *resource.Resource
	key    attribute.Distinct
	scopes []scopeGroup
}

type scopeGroup struct {
	scope instrumentation.Scope
	spans []sdktrace.ReadOnlySpan
}

// encode replaces e.b with the request holding spans, grouped by resource (attribute
// set) and instrumentation scope as the SDK's exporter groups them, and returns it.
// Nil spans are skipped; no spans makes an empty request.
func (e *encoder) encode(spans []sdktrace.ReadOnlySpan) []byte {
	e.group(spans)
	e.b = e.b[:0]
	for i := range e.groups {
		e.resourceSpans(&e.groups[i])
	}
	e.release()
	return e.b
}

// group sorts spans into e.groups, reusing the slices of the previous export.
func (e *encoder) group(spans []sdktrace.ReadOnlySpan) {
	e.groups = e.groups[:0]
	for _, s := range spans {
		if s == nil {
			continue
		}
		g := e.resourceGroup(s.Resource())
		sg := g.scopeGroup(s.InstrumentationScope())
		sg.spans = append(sg.spans, s)
	}
}

func (e *encoder) resourceGroup(res *resource.Resource) *resourceGroup {
	for i := range e.groups {
		if e.groups[i].res == res {
			return &e.groups[i]
		}
	}
	key := res.Equivalent()
	for i := range e.groups {
		if e.groups[i].key == key {
			return &e.groups[i]
		}
	}
	e.groups = slices.Grow(e.groups, 1)[:len(e.groups)+1] // keeps a reused entry's scopes slice
	g := &e.groups[len(e.groups)-1]
	g.res, g.key, g.scopes = res, key, g.scopes[:0]
	return g
}

func (g *resourceGroup) scopeGroup(scope instrumentation.Scope) *scopeGroup {
	for i := range g.scopes {
		if g.scopes[i].scope == scope {
			return &g.scopes[i]
		}
	}
	g.scopes = slices.Grow(g.scopes, 1)[:len(g.scopes)+1]
	sg := &g.scopes[len(g.scopes)-1]
	sg.scope, sg.spans = scope, sg.spans[:0]
	return sg
}

// release drops the references to this export's spans and resources (the slices stay).
func (e *encoder) release() {
	for i := range e.groups {
		g := &e.groups[i]
		for j := range g.scopes {
			clear(g.scopes[j].spans)
			g.scopes[j].scope = instrumentation.Scope{}
		}
		g.res, g.key = nil, attribute.Distinct{}
	}
}

func (e *encoder) resourceSpans(g *resourceGroup) {
	rs := e.begin(fRequestResourceSpans)
	if g.res != nil {
		r := e.begin(fResourceSpansResource)
		e.iter(fResourceAttributes, g.res.Iter())
		e.end(r)
	}
	for i := range g.scopes {
		e.scopeSpans(&g.scopes[i])
	}
	e.str(fResourceSpansSchemaURL, g.res.SchemaURL())
	e.end(rs)
}

func (e *encoder) scopeSpans(sg *scopeGroup) {
	ss := e.begin(fResourceSpansScopeSpans)
	if sg.scope != (instrumentation.Scope{}) {
		sc := e.begin(fScopeSpansScope)
		e.str(fScopeName, sg.scope.Name)
		e.str(fScopeVersion, sg.scope.Version)
		e.iter(fScopeAttributes, sg.scope.Attributes.Iter())
		e.end(sc)
	}
	for _, s := range sg.spans {
		e.span(s)
	}
	e.str(fScopeSpansSchemaURL, sg.scope.SchemaURL)
	e.end(ss)
}

// span writes one Span as the SDK's exporter converts it (otlptrace's tracetransform):
// the same fields, the same flags, no trace_state on links.
func (e *encoder) span(s sdktrace.ReadOnlySpan) {
	m := e.begin(fScopeSpansSpans)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	e.bytes(fSpanTraceID, tid[:])
	e.bytes(fSpanSpanID, sid[:])
	e.str(fSpanTraceState, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		e.bytes(fSpanParentSpanID, psid[:])
	}
	e.str(fSpanName, s.Name())
	e.uint(fSpanKind, uint64(spanKind(s.SpanKind())))
	e.time(fSpanStartTime, s.StartTime().UnixNano())
	e.time(fSpanEndTime, s.EndTime().UnixNano())
	for _, kv := range s.Attributes() {
		e.keyValue(fSpanAttributes, kv)
	}
	e.uint(fSpanDroppedAttributes, clampUint32(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		e.event(ev)
	}
	e.uint(fSpanDroppedEvents, clampUint32(s.DroppedEvents()))
	for _, l := range s.Links() {
		e.link(l)
	}
	e.uint(fSpanDroppedLinks, clampUint32(s.DroppedLinks()))
	e.status(s.Status())
	e.fixed32(fSpanFlags, flags(sc.TraceFlags(), parent))
	e.end(m)
}

func (e *encoder) event(ev sdktrace.Event) {
	m := e.begin(fSpanEvents)
	e.time(fEventTime, ev.Time.UnixNano())
	e.str(fEventName, ev.Name)
	for _, kv := range ev.Attributes {
		e.keyValue(fEventAttributes, kv)
	}
	e.uint(fEventDroppedAttributes, clampUint32(ev.DroppedAttributeCount))
	e.end(m)
}

func (e *encoder) link(l sdktrace.Link) {
	m := e.begin(fSpanLinks)
	tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
	e.bytes(fLinkTraceID, tid[:])
	e.bytes(fLinkSpanID, sid[:])
	for _, kv := range l.Attributes {
		e.keyValue(fLinkAttributes, kv)
	}
	e.uint(fLinkDroppedAttributes, clampUint32(l.DroppedAttributeCount))
	e.fixed32(fLinkFlags, flags(l.SpanContext.TraceFlags(), l.SpanContext))
	e.end(m)
}

// status is always written (the SDK's exporter always sets it), empty when unset.
func (e *encoder) status(st sdktrace.Status) {
	m := e.begin(fSpanStatus)
	e.str(fStatusMessage, st.Description)
	var code uint64 // STATUS_CODE_UNSET
	switch st.Code {
	case codes.Ok:
		code = 1
	case codes.Error:
		code = 2
	}
	e.uint(fStatusCode, code)
	e.end(m)
}

// flags is the W3C trace flags in the low byte, with "whether the parent is remote is
// known" always set and "remote" when parent is.
func flags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// spanKind is trace/v1 Span.SpanKind's number of k (UNSPECIFIED for an unknown kind).
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer:
		return int(k) // the API's numbering is OTLP's: internal 1 … consumer 5
	default:
		return 0
	}
}

func clampUint32(v int) uint64 {
	return uint64(min(max(v, 0), math.MaxUint32))
}
