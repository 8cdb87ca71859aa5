package a2a

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var allStates = []struct {
	state TaskState
	v03   string
	v1    string
}{
	{StateSubmitted, "submitted", "TASK_STATE_SUBMITTED"},
	{StateWorking, "working", "TASK_STATE_WORKING"},
	{StateInputRequired, "input-required", "TASK_STATE_INPUT_REQUIRED"},
	{StateAuthRequired, "auth-required", "TASK_STATE_AUTH_REQUIRED"},
	{StateCompleted, "completed", "TASK_STATE_COMPLETED"},
	{StateCanceled, "canceled", "TASK_STATE_CANCELED"},
	{StateFailed, "failed", "TASK_STATE_FAILED"},
	{StateRejected, "rejected", "TASK_STATE_REJECTED"},
	{StateUnknown, "unknown", "TASK_STATE_UNSPECIFIED"},
}

func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range allStates {
		t.Run(string(tc.state), func(t *testing.T) {
			t.Parallel()
			for _, d := range []struct {
				d    Dialect
				want string
			}{{V03, tc.v03}, {V1, tc.v1}} {
				got := encodeState(tc.state, d.d)
				if got != d.want {
					t.Errorf("encodeState(%q, %v) = %q, want %q", tc.state, d.d, got, d.want)
				}
				back, ok := DecodeState(got)
				if !ok || back != tc.state {
					t.Errorf("DecodeState(%q) = %q, %v; want %q, true", got, back, ok, tc.state)
				}
			}
		})
	}
}

func TestEncodeStateEmpty(t *testing.T) {
	t.Parallel()
	if got := encodeState("", V1); got != "TASK_STATE_UNSPECIFIED" {
		t.Errorf(`encodeState("", V1) = %q, want TASK_STATE_UNSPECIFIED`, got)
	}
}

func TestDecodeStateRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "done", "COMPLETED", "Completed", "TASK_STATE_", "TASK_STATE_DONE", "task_state_completed", "input_required", " completed"} {
		if got, ok := DecodeState(s); ok {
			t.Errorf("DecodeState(%q) = %q, true; want false", s, got)
		}
	}
}

func TestStatePredicates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state                             TaskState
		terminal, interrupted, endsStream bool
	}{
		{StateSubmitted, false, false, false},
		{StateWorking, false, false, false},
		{StateInputRequired, false, true, true},
		{StateAuthRequired, false, true, false},
		{StateCompleted, true, false, true},
		{StateCanceled, true, false, true},
		{StateFailed, true, false, true},
		{StateRejected, true, false, true},
		{StateUnknown, false, false, false},
	}
	for _, tc := range tests {
		if got := tc.state.Terminal(); got != tc.terminal {
			t.Errorf("%q.Terminal() = %v, want %v", tc.state, got, tc.terminal)
		}
		if got := tc.state.Interrupted(); got != tc.interrupted {
			t.Errorf("%q.Interrupted() = %v, want %v", tc.state, got, tc.interrupted)
		}
		if got := tc.state.EndsStream(); got != tc.endsStream {
			t.Errorf("%q.EndsStream() = %v, want %v", tc.state, got, tc.endsStream)
		}
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		role     Role
		v03, v1  string
		decodeOK bool
	}{
		{RoleUser, "user", "ROLE_USER", true},
		{RoleAgent, "agent", "ROLE_AGENT", true},
		{Role(""), "", "ROLE_UNSPECIFIED", false},
		{Role("bot"), "bot", "ROLE_UNSPECIFIED", false},
	}
	for _, tc := range tests {
		if got := encodeRole(tc.role, V03); got != tc.v03 {
			t.Errorf("encodeRole(%q, V03) = %q, want %q", tc.role, got, tc.v03)
		}
		if got := encodeRole(tc.role, V1); got != tc.v1 {
			t.Errorf("encodeRole(%q, V1) = %q, want %q", tc.role, got, tc.v1)
		}
		for _, s := range []string{tc.v03, tc.v1} {
			got, ok := decodeRole(s)
			if ok != tc.decodeOK || (ok && got != tc.role) {
				t.Errorf("decodeRole(%q) = %q, %v; want %q, %v", s, got, ok, tc.role, tc.decodeOK)
			}
		}
	}
}

func TestDialectString(t *testing.T) {
	t.Parallel()
	if V1.String() != "1.0" || V03.String() != "0.3" {
		t.Errorf("V1, V03 = %q, %q; want 1.0, 0.3", V1.String(), V03.String())
	}
}

// TestPartRoundTrip: every part kind survives internal → wire JSON → internal in both
// dialects, and the wire JSON has the dialect's shape.
func TestPartRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		part    Part
		wantV03 string
		wantV1  string
	}{
		{
			name:    "text",
			part:    Part{Kind: PartText, Text: "héllo <b>"},
			wantV03: `{"kind":"text","text":"héllo <b>"}`,
			wantV1:  `{"text":"héllo <b>"}`,
		},
		{
			name:    "empty text",
			part:    Part{Kind: PartText, Text: ""},
			wantV03: `{"kind":"text","text":""}`,
			wantV1:  `{"text":""}`,
		},
		{
			name:    "text with metadata",
			part:    Part{Kind: PartText, Text: "x", Metadata: map[string]any{"lang": "en", "n": 2.5}},
			wantV03: `{"kind":"text","text":"x","metadata":{"lang":"en","n":2.5}}`,
			wantV1:  `{"text":"x","metadata":{"lang":"en","n":2.5}}`,
		},
		{
			name:    "file bytes",
			part:    Part{Kind: PartFile, Raw: []byte{0, 1, 2, 0xff, 'h', 'i'}, MediaType: "application/octet-stream", Filename: "a.bin"},
			wantV03: `{"kind":"file","file":{"bytes":"AAEC/2hp","mimeType":"application/octet-stream","name":"a.bin"}}`,
			wantV1:  `{"raw":"AAEC/2hp","mediaType":"application/octet-stream","filename":"a.bin"}`,
		},
		{
			name:    "file bytes without media type",
			part:    Part{Kind: PartFile, Raw: []byte("hi")},
			wantV03: `{"kind":"file","file":{"bytes":"aGk="}}`,
			wantV1:  `{"raw":"aGk="}`,
		},
		{
			name:    "file uri",
			part:    Part{Kind: PartFile, URL: "https://files.example/r.pdf", MediaType: "application/pdf", Filename: "r.pdf"},
			wantV03: `{"kind":"file","file":{"uri":"https://files.example/r.pdf","mimeType":"application/pdf","name":"r.pdf"}}`,
			wantV1:  `{"url":"https://files.example/r.pdf","mediaType":"application/pdf","filename":"r.pdf"}`,
		},
		{
			name:    "data object",
			part:    Part{Kind: PartData, Data: json.RawMessage(`{"a":[1,2,{"b":null}],"c":"d"}`)},
			wantV03: `{"kind":"data","data":{"a":[1,2,{"b":null}],"c":"d"}}`,
			wantV1:  `{"data":{"a":[1,2,{"b":null}],"c":"d"}}`,
		},
		{
			name:    "data array (v1 allows any value)",
			part:    Part{Kind: PartData, Data: json.RawMessage(`[1,"two"]`)},
			wantV03: `{"kind":"data","data":[1,"two"]}`,
			wantV1:  `{"data":[1,"two"]}`,
		},
		{
			name:    "data false",
			part:    Part{Kind: PartData, Data: json.RawMessage(`false`)},
			wantV03: `{"kind":"data","data":false}`,
			wantV1:  `{"data":false}`,
		},
	}
	for _, tc := range tests {
		for _, d := range []struct {
			d    Dialect
			want string
		}{{V03, tc.wantV03}, {V1, tc.wantV1}} {
			t.Run(d.d.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				w := encodePart(&tc.part, d.d)
				b, err := json.Marshal(w)
				if err != nil {
					t.Fatalf("marshal: %v", err)
				}
				if diff := cmp.Diff(mustParse(t, d.want), mustParse(t, string(b))); diff != "" {
					t.Errorf("encodePart(%v) wire JSON (-want +got):\n%s", d.d, diff)
				}
				var back wirePart
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatalf("unmarshal %s: %v", b, err)
				}
				got, err := decodePart(&back, "p", d.d)
				if err != nil {
					t.Fatalf("decodePart(%s) error = %v", b, err)
				}
				if diff := cmp.Diff(tc.part, got); diff != "" {
					t.Errorf("part round trip through %s (-want +got):\n%s", b, diff)
				}
			})
		}
	}
}

// TestDecodePartLenient: v0.3 clients that omit kind and v1 fields under a v0.3 kind.
func TestDecodePartLenient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		wire string
		want Part
	}{
		{"v0.3 text without kind", `{"text":"hi"}`, TextPart("hi")},
		{"v0.3 file without kind", `{"file":{"uri":"https://x.example/f","mimeType":"text/plain"}}`, Part{Kind: PartFile, URL: "https://x.example/f", MediaType: "text/plain"}},
		{"v0.3 data without kind", `{"data":{"a":1}}`, Part{Kind: PartData, Data: json.RawMessage(`{"a":1}`)}},
		{"v1 kind text", `{"kind":"text","text":"hi"}`, TextPart("hi")},
		{"v1 url with kind file", `{"kind":"file","url":"https://x.example/f"}`, Part{Kind: PartFile, URL: "https://x.example/f"}},
		{"mediaType wins over mimeType", `{"kind":"file","file":{"bytes":"aGk=","mimeType":"a/b","name":"n1"},"mediaType":"c/d","filename":"n2"}`, Part{Kind: PartFile, Raw: []byte("hi"), MediaType: "c/d", Filename: "n2"}},
		{"text null is absent", `{"text":null,"data":{"a":1}}`, Part{Kind: PartData, Data: json.RawMessage(`{"a":1}`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var w wirePart
			if err := json.Unmarshal([]byte(tc.wire), &w); err != nil {
				t.Fatal(err)
			}
			got, err := decodePart(&w, "p", V1)
			if err != nil {
				t.Fatalf("decodePart(%s) error = %v", tc.wire, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decodePart(%s) (-want +got):\n%s", tc.wire, diff)
			}
		})
	}
}

// TestDecodePartExactlyOne: a v1.0 part has exactly one of text, raw, url and data.
func TestDecodePartExactlyOne(t *testing.T) {
	t.Parallel()
	for _, wire := range []string{
		`{}`,
		`{"mediaType":"text/plain"}`,
		`{"text":"a","data":{}}`,
		`{"text":"a","url":"u"}`,
		`{"text":"a","raw":"aGk="}`,
		`{"raw":"aGk=","url":"https://x.example/f"}`, // both file sources: which one is meant?
		`{"file":{"bytes":"aGk=","uri":"https://x.example/f"}}`,               // v0.3 FileWithBytes | FileWithUri is a oneOf
		`{"kind":"file","file":{"bytes":"aGk=","uri":"https://x.example/f"}}`, // same, with kind
		`{"file":{"uri":"u"},"url":"u"}`,
		`{"data":{"a":1},"url":"u"}`,
	} {
		t.Run(wire, func(t *testing.T) {
			t.Parallel()
			var w wirePart
			if err := json.Unmarshal([]byte(wire), &w); err != nil {
				t.Fatal(err)
			}
			got, err := decodePart(&w, "p", V1)
			if !errors.Is(err, ErrInvalidParams) {
				t.Errorf("decodePart(%s) = %+v, %v; want an ErrInvalidParams", wire, got, err)
			}
		})
	}
}

func TestDecodeSendParams(t *testing.T) {
	t.Parallel()
	hi := []Part{TextPart("hi")}
	tests := []struct {
		name string
		d    Dialect
		raw  string
		want *SendParams
	}{
		{
			name: "v0.3 message without kind is accepted",
			d:    V03,
			raw:  `{"message":{"messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}`,
			want: &SendParams{Message: Message{MessageID: "m1", Role: RoleUser, Parts: hi}},
		},
		{
			name: "v0.3 message and parts without kind",
			d:    V03,
			raw:  `{"message":{"messageId":"m1","role":"user","parts":[{"text":"hi"}]}}`,
			want: &SendParams{Message: Message{MessageID: "m1", Role: RoleUser, Parts: hi}},
		},
		{
			name: "v1 role spelling accepted in v0.3",
			d:    V03,
			raw:  `{"message":{"kind":"message","messageId":"m1","role":"ROLE_USER","parts":[{"kind":"text","text":"hi"}]}}`,
			want: &SendParams{Message: Message{MessageID: "m1", Role: RoleUser, Parts: hi}},
		},
		{
			name: "legacy params.contextId used when message has none",
			d:    V03,
			raw:  `{"contextId":"ctx-legacy","message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}`,
			want: &SendParams{Message: Message{MessageID: "m1", ContextID: "ctx-legacy", Role: RoleUser, Parts: hi}},
		},
		{
			name: "legacy params.contextId ignored when message has one",
			d:    V1,
			raw:  `{"contextId":"ctx-legacy","message":{"messageId":"m1","contextId":"ctx-msg","role":"ROLE_USER","parts":[{"text":"hi"}]}}`,
			want: &SendParams{Message: Message{MessageID: "m1", ContextID: "ctx-msg", Role: RoleUser, Parts: hi}},
		},
		{
			name: "v0.3 blocking false returns immediately",
			d:    V03,
			raw:  `{"message":{"messageId":"m1","role":"user","parts":[{"text":"hi"}]},"configuration":{"blocking":false}}`,
			want: &SendParams{Message: Message{MessageID: "m1", Role: RoleUser, Parts: hi}, Config: SendConfig{ReturnImmediately: true}},
		},
		{
			name: "v0.3 blocking true blocks",
			d:    V03,
			raw:  `{"message":{"messageId":"m1","role":"user","parts":[{"text":"hi"}]},"configuration":{"blocking":true}}`,
			want: &SendParams{Message: Message{MessageID: "m1", Role: RoleUser, Parts: hi}},
		},
		{
			name: "v0.3 configuration without blocking blocks",
			d:    V03,
			raw:  `{"message":{"messageId":"m1","role":"user","parts":[{"text":"hi"}]},"configuration":{"historyLength":0}}`,
			want: &SendParams{Message: Message{MessageID: "m1", Role: RoleUser, Parts: hi}, Config: SendConfig{HistoryLength: ptr(0)}},
		},
		{
			name: "v1 returnImmediately true",
			d:    V1,
			raw:  `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}`,
			want: &SendParams{Message: Message{MessageID: "m1", Role: RoleUser, Parts: hi}, Config: SendConfig{ReturnImmediately: true}},
		},
		{
			name: "v1 returnImmediately false blocks",
			d:    V1,
			raw:  `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":false}}`,
			want: &SendParams{Message: Message{MessageID: "m1", Role: RoleUser, Parts: hi}},
		},
		{
			name: "v1 everything",
			d:    V1,
			raw: `{"tenant":"acme","metadata":{"k":"v"},"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":3},
				"message":{"messageId":"m1","contextId":"c","taskId":"t","role":"ROLE_USER","parts":[{"text":"hi"},{"url":"https://x.example/f","mediaType":"text/plain"}],
				"metadata":{"a":true},"extensions":["https://ext.example/1"],"referenceTaskIds":["t0"]}}`,
			want: &SendParams{
				Tenant:   "acme",
				Metadata: map[string]any{"k": "v"},
				Config:   SendConfig{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: ptr(3)},
				Message: Message{
					MessageID: "m1", ContextID: "c", TaskID: "t", Role: RoleUser,
					Parts:            []Part{TextPart("hi"), {Kind: PartFile, URL: "https://x.example/f", MediaType: "text/plain"}},
					Metadata:         map[string]any{"a": true},
					Extensions:       []string{"https://ext.example/1"},
					ReferenceTaskIDs: []string{"t0"},
				},
			},
		},
		{
			name: "unknown fields are ignored",
			d:    V1,
			raw:  `{"future":1,"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi","future":2}],"future":3}}`,
			want: &SendParams{Message: Message{MessageID: "m1", Role: RoleUser, Parts: hi}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeSendParams(json.RawMessage(tc.raw), tc.d)
			if err != nil {
				t.Fatalf("DecodeSendParams(%s) error = %v", tc.raw, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DecodeSendParams(%s) (-want +got):\n%s", tc.raw, diff)
			}
		})
	}
}

func TestDecodeListTasksParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want *ListTasksParams
	}{
		{``, &ListTasksParams{PageSize: 50}},
		{`null`, &ListTasksParams{PageSize: 50}},
		{`{}`, &ListTasksParams{PageSize: 50}},
		{`{"pageSize":1}`, &ListTasksParams{PageSize: 1}},
		{`{"pageSize":100}`, &ListTasksParams{PageSize: 100}},
		{`{"status":"TASK_STATE_UNSPECIFIED"}`, &ListTasksParams{PageSize: 50}},
		{`{"status":"TASK_STATE_INPUT_REQUIRED","includeArtifacts":true,"tenant":"t"}`, &ListTasksParams{PageSize: 50, Status: StateInputRequired, IncludeArtifacts: true, Tenant: "t"}},
		{`{"statusTimestampAfter":"2026-01-02T03:04:05.678+02:00"}`, &ListTasksParams{PageSize: 50, StatusTimestampAfter: time.Date(2026, 1, 2, 1, 4, 5, 678_000_000, time.UTC)}},
	}
	for _, tc := range tests {
		got, err := DecodeListTasksParams(json.RawMessage(tc.raw))
		if err != nil {
			t.Errorf("DecodeListTasksParams(%s) error = %v", tc.raw, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("DecodeListTasksParams(%s) (-want +got):\n%s", tc.raw, diff)
		}
	}
}

func TestDecodeGetAndTaskIDParams(t *testing.T) {
	t.Parallel()
	g, err := DecodeGetTaskParams(json.RawMessage(`{"id":"t1","historyLength":0,"tenant":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&GetTaskParams{ID: "t1", HistoryLength: ptr(0), Tenant: "x"}, g); diff != "" {
		t.Errorf("DecodeGetTaskParams (-want +got):\n%s", diff)
	}
	p, err := DecodeTaskIDParams(json.RawMessage(`{"id":"t1","metadata":{"a":"b"},"tenant":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&TaskIDParams{ID: "t1", Metadata: map[string]any{"a": "b"}, Tenant: "x"}, p); diff != "" {
		t.Errorf("DecodeTaskIDParams (-want +got):\n%s", diff)
	}
}

// TestEncodeTimestamps: timestamps go out as UTC with milliseconds and a Z, whatever
// the location; a zero time is omitted.
func TestEncodeTimestamps(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("CEST", 2*60*60)
	tests := []struct {
		ts   time.Time
		want string
	}{
		{time.Date(2026, 5, 1, 12, 0, 0, 0, loc), "2026-05-01T10:00:00.000Z"},
		{time.Date(2026, 5, 1, 12, 0, 0, 123_456_789, time.UTC), "2026-05-01T12:00:00.123Z"},
		{time.Time{}, ""},
	}
	for _, tc := range tests {
		w := encodeStatus(&TaskStatus{State: StateWorking, Timestamp: tc.ts}, V1)
		if w.Timestamp != tc.want {
			t.Errorf("encodeStatus(%v).Timestamp = %q, want %q", tc.ts, w.Timestamp, tc.want)
		}
	}
	b, err := EncodeTask(&Task{ID: "t", Status: TaskStatus{State: StateWorking}}, V1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mustParse(t, `{"id":"t","contextId":"","status":{"state":"TASK_STATE_WORKING"}}`), mustParse(t, string(b))); diff != "" {
		t.Errorf("EncodeTask without timestamp (-want +got):\n%s", diff)
	}
}

// TestEncodeEventDialects pins the per-dialect event shapes: final only in v0.3 (and
// always there), append/lastChunk always in v0.3 and only when true in v1.0.
func TestEncodeEventDialects(t *testing.T) {
	t.Parallel()
	status := &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateInputRequired}}
	art := &ArtifactUpdate{TaskID: "t", ContextID: "c", Artifact: Artifact{ArtifactID: "a", Parts: []Part{TextPart("x")}}}
	msg := &Message{MessageID: "m", ContextID: "c", Role: RoleAgent, Parts: []Part{TextPart("x")}}
	tests := []struct {
		name string
		ev   Event
		d    Dialect
		want string
	}{
		{"v0.3 status not final", Event{Status: status}, V03, `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"input-required"},"final":false}`},
		{"v0.3 status final", Event{Status: &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateCompleted}, Final: true}}, V03, `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}`},
		{"v1 status final dropped", Event{Status: &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateCompleted}, Final: true}}, V1, `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`},
		{"v0.3 artifact flags false", Event{Artifact: art}, V03, `{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}]},"append":false,"lastChunk":false}`},
		{"v1 artifact flags false omitted", Event{Artifact: art}, V1, `{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}`},
		{"v0.3 message", Event{Message: msg}, V03, `{"kind":"message","messageId":"m","contextId":"c","role":"agent","parts":[{"kind":"text","text":"x"}]}`},
		{"v1 message", Event{Message: msg}, V1, `{"message":{"messageId":"m","contextId":"c","role":"ROLE_AGENT","parts":[{"text":"x"}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := EncodeEvent(&tc.ev, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(mustParse(t, tc.want), mustParse(t, string(b))); diff != "" {
				t.Errorf("EncodeEvent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeSendResult(t *testing.T) {
	t.Parallel()
	msg := &Message{MessageID: "m", ContextID: "c", Role: RoleAgent, Parts: []Part{TextPart("x")}}
	for _, tc := range []struct {
		d    Dialect
		want string
	}{
		{V03, `{"kind":"message","messageId":"m","contextId":"c","role":"agent","parts":[{"kind":"text","text":"x"}]}`},
		{V1, `{"message":{"messageId":"m","contextId":"c","role":"ROLE_AGENT","parts":[{"text":"x"}]}}`},
	} {
		b, err := EncodeSendResult(SendResult{Message: msg}, tc.d)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(mustParse(t, tc.want), mustParse(t, string(b))); diff != "" {
			t.Errorf("EncodeSendResult(message, %v) (-want +got):\n%s", tc.d, diff)
		}
	}
}

func TestEncodeEmptyIsInternal(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{V03, V1} {
		if _, err := EncodeSendResult(SendResult{}, d); !errors.Is(err, ErrInternal) {
			t.Errorf("EncodeSendResult(empty, %v) error = %v, want ErrInternal", d, err)
		}
		if _, err := EncodeEvent(&Event{Seq: 3}, d); !errors.Is(err, ErrInternal) {
			t.Errorf("EncodeEvent(empty, %v) error = %v, want ErrInternal", d, err)
		}
	}
}

func TestEncodeListTasksEmpty(t *testing.T) {
	t.Parallel()
	b, err := EncodeListTasks(&ListTasksResult{PageSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	// tasks is [] (not null) and nextPageToken is present even when "" (REQUIRED).
	if diff := cmp.Diff(mustParse(t, `{"tasks":[],"nextPageToken":"","pageSize":50,"totalSize":0}`), mustParse(t, string(b))); diff != "" {
		t.Errorf("EncodeListTasks (-want +got):\n%s", diff)
	}
}

func TestPartsText(t *testing.T) {
	t.Parallel()
	m := Message{Parts: []Part{TextPart("a"), {Kind: PartData, Data: json.RawMessage(`{}`)}, TextPart("b"), {Kind: PartFile, URL: "u"}}}
	if got := m.Text(); got != "ab" {
		t.Errorf("Text() = %q, want %q", got, "ab")
	}
	if got := PartsText([]Part{TextPart("only")}); got != "only" {
		t.Errorf("PartsText(one) = %q, want only", got)
	}
	if got := PartsText(nil); got != "" {
		t.Errorf("PartsText(nil) = %q, want empty", got)
	}
}

func TestToRPCErrorInvalidParamsField(t *testing.T) {
	t.Parallel()
	e := ToRPCError(InvalidParams("message.parts[0]", "found %d", 2))
	want := RPCError{Code: -32602, Message: "message.parts[0]: found 2", Reason: "INVALID_PARAMS", Domain: ErrorDomain, Field: "message.parts[0]",
		GRPCCode: 3, Status: "INVALID_ARGUMENT", HTTPStatus: 400}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("ToRPCError (-want +got):\n%s", diff)
	}
	if got := CodeOf(errors.New("x")); got != -32603 {
		t.Errorf("CodeOf(plain error) = %d, want -32603", got)
	}
}
