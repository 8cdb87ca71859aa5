package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/internal/jsonenc"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// normalizeJSON is what the encoder does to a json.RawMessage: compact it and escape
// HTML characters. Raw JSON that went through an encode compares equal to its source
// under it, whatever its whitespace.
func normalizeJSON(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	out, err := json.Marshal(json.RawMessage(b))
	if err != nil {
		return append([]byte("invalid:"), b...)
	}
	return out
}

// fuzzCmpOpts compares decoded values: raw JSON by its normal form, empty and nil
// slices and maps as equal (omitempty makes them the same on the wire).
var fuzzCmpOpts = cmp.Options{
	cmp.AllowUnexported(Request{}, methodSpec{}), // the method as DecodeRequest looked it up
	cmp.FilterPath(isRawJSON, cmp.Comparer(func(a, b json.RawMessage) bool { return bytes.Equal(normalizeJSON(a), normalizeJSON(b)) })),
	cmp.FilterPath(func(p cmp.Path) bool { return !isRawJSON(p) }, cmpopts.EquateEmpty()),
}

var rawJSONType = reflect.TypeFor[json.RawMessage]()

// isRawJSON reports whether p ends at a json.RawMessage (not any []byte, such as Part.Raw).
func isRawJSON(p cmp.Path) bool { return p.Last().Type() == rawJSONType }

// encodeSendParamsForTest encodes p back to params JSON in dialect d through the
// package's wire types.
func encodeSendParamsForTest(p *SendParams, d Dialect) ([]byte, error) {
	type config struct {
		AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
		HistoryLength       *int     `json:"historyLength,omitempty"`
		Blocking            *bool    `json:"blocking,omitempty"`
		ReturnImmediately   *bool    `json:"returnImmediately,omitempty"`
	}
	out := struct {
		Tenant        string         `json:"tenant,omitempty"`
		Message       wireMessage    `json:"message"`
		Metadata      map[string]any `json:"metadata,omitempty"`
		Configuration *config        `json:"configuration,omitempty"`
	}{Tenant: p.Tenant, Message: encodeMessage(&p.Message, d), Metadata: p.Metadata}
	c := &config{AcceptedOutputModes: p.Config.AcceptedOutputModes, HistoryLength: p.Config.HistoryLength}
	if p.Config.ReturnImmediately {
		if d == V03 {
			c.Blocking = ptr(false)
		} else {
			c.ReturnImmediately = ptr(true)
		}
	}
	out.Configuration = c
	return json.Marshal(out)
}

var fuzzSeeds = []string{
	// Valid requests of both dialects.
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","contextId":"c1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
	`{"jsonrpc":"2.0","id":"a","method":"SendMessage","params":{"tenant":"t","metadata":{"k":[1,2.5,"x",null,true]},"configuration":{"returnImmediately":true,"historyLength":2,"acceptedOutputModes":["text/plain"]},"message":{"messageId":"m1","taskId":"t1","role":"ROLE_USER","parts":[{"text":"hi","mediaType":"text/markdown"},{"raw":"aGVsbG8=","filename":"h.txt"},{"url":"https://x.example/f"},{"data":{"a":{"b":[1]}}},{"data":"str"}],"extensions":["u"],"referenceTaskIds":["t0"],"metadata":{"m":1}}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"stream me"}]}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"task-1","historyLength":0}}`,
	`{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{"contextId":"c","pageSize":10,"status":"TASK_STATE_WORKING","statusTimestampAfter":"2026-01-01T00:00:00Z"}}`,
	`{"jsonrpc":"2.0","id":5,"method":"CancelTask","params":{"id":"task-1"}}`,
	`{"jsonrpc":"2.0","id":6,"method":"SubscribeToTask","params":{"id":"task-1"}}`,
	`{"jsonrpc":"2.0","id":7,"method":"GetExtendedAgentCard"}`,
	`{"jsonrpc":"2.0","id":8,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t","url":"https://h.example"}}`,
	`{"jsonrpc":"2.0","id":"x","method":"message/send","params":{"message":{"kind":"message","messageId":"m1","contextId":"c1","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}}`,
	`{"jsonrpc":"2.0","id":"x","method":"message/send","params":{"contextId":"legacy","message":{"messageId":"m1","role":"user","parts":[{"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain","name":"a"}},{"kind":"file","file":{"uri":"https://x.example/f"}},{"kind":"data","data":{"a":1}},{"text":"no kind"}]}}}`,
	`{"jsonrpc":"2.0","id":9,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
	`{"jsonrpc":"2.0","id":10,"method":"tasks/get","params":{"id":"task-1","historyLength":1}}`,
	`{"jsonrpc":"2.0","id":11,"method":"tasks/cancel","params":{"id":"task-done"}}`,
	`{"jsonrpc":"2.0","id":12,"method":"tasks/resubscribe","params":{"id":"task-1"}}`,
	`{"jsonrpc":"2.0","id":13,"method":"tasks/pushNotificationConfig/get","params":{"id":"t"}}`,
	// ids of every JSON type.
	`{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"task-1"}}`,
	`{"jsonrpc":"2.0","id":-7,"method":"GetTask","params":{"id":"task-1"}}`,
	`{"jsonrpc":"2.0","id":1.5e3,"method":"GetTask","params":{"id":"task-1"}}`,
	`{"jsonrpc":"2.0","id":"<&>\u2028","method":"GetTask","params":{"id":"task-1"}}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask"}`,
	`{"jsonrpc":"2.0","id":[1,2],"method":"GetTask"}`,
	`{"jsonrpc":"2.0","id":true,"method":"GetTask"}`,
	`{"jsonrpc":"2.0","method":"GetTask"}`,
	// Envelope errors.
	`{"id":1,"method":"GetTask","params":{"id":"t"}}`,
	`{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"t"}}`,
	`{"jsonrpc":2,"id":1,"method":"GetTask"}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":["t"]}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":"hi"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`,
	`"just a string"`,
	`12345`,
	`null`,
	``,
	`{`,
	// Nesting, encoding, duplicates, trailing data, huge numbers.
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}]}}}`,
	strings.Repeat("[", 11000) + strings.Repeat("]", 11000),
	`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":` + strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat("}", 10001) + `}`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"SendMessage\",\"params\":{\"message\":{\"messageId\":\"\xc3\x28\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"\xed\xa0\x80\"}]}}}",
	`{"jsonrpc":"2.0","id":1,"id":"two","method":"GetTask","method":"CancelTask","params":{"id":"a","id":"task-1"}}`,
	`{"jsonrpc":"2.0","ID":1,"Method":"GetTask","PARAMS":{"ID":"task-1"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"task-1"}} trailing`,
	`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"task-1"}}{}`,
	`{"jsonrpc":"2.0","id":1e999,"method":"GetTask","params":{"id":"task-1","historyLength":1e999}}`,
	`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ListTasks","params":{"pageSize":99999999999999999999}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","raw":"aGk="}]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"aGk=","url":"u"}]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":null}]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x","metadata":{"n":1e308,"big":12345678901234567890}}]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"data","data":{"html":"<b>&amp;</b>"}}]}}}`,
	// Surrogate escapes (issue 35 item 6): lone ones anywhere, pairs, look-alikes.
	`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","contextId":"u8-\ud800","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","contextId":"u8-\udc00","taskId":"\uDBFF\uDFFF","role":"ROLE_USER","parts":[{"text":"\ud83d\ude00 \\ud800"}]}}}`,
	`{"jsonrpc":"2.0","id":"\ud800","method":"GetTask","params":{"id":"t"}}`,
	`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id\udc00":"t","x":["\ud800\ud800"]}}`,
	`{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"\ufffd\ud800"}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/get\",\"params\":{\"id\":\"\\ud800\xff\"}}",
}

// FuzzDecodeRequest: decoding never panics; a decoded request re-encodes to an equal
// request; a decoded send message re-encodes through the wire types to equal params;
// and the whole transport answers every body with a JSON-RPC response echoing the id.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	h := NewJSONRPCHandler(newWorldFake(), TransportConfig{Logger: discardLogger()})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if req == nil {
			t.Fatalf("DecodeRequest(%q) returned a nil request (error %v)", body, err)
		}
		if !json.Valid(req.ID) {
			t.Fatalf("DecodeRequest(%q).ID = %q, not JSON", body, req.ID)
		}
		if err != nil {
			if !errors.Is(err, ErrParseError) && !errors.Is(err, ErrInvalidRequest) && !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("DecodeRequest(%q) error = %v, want ErrParseError, ErrInvalidRequest or ErrInvalidParams", body, err)
			}
			if _, p := jsonenc.CheckText(body); errors.Is(err, ErrInvalidParams) && (p != jsonenc.LoneSurrogate || !strings.Contains(err.Error(), "lone UTF-16 surrogate")) {
				t.Fatalf("DecodeRequest(%q) error = %v: invalid params other than a lone surrogate", body, err)
			}
		} else {
			if _, p := jsonenc.CheckText(body); p != jsonenc.NoProblem {
				t.Fatalf("DecodeRequest(%q) accepted a body with a lone surrogate or invalid UTF-8", body)
			}
			checkRequestRoundTrip(t, body, req)
			checkParams(t, body, req)
		}
		checkTransport(t, h, body, req)
	})
}

func checkRequestRoundTrip(t *testing.T, body []byte, req *Request) {
	t.Helper()
	if req.Method == "" {
		t.Fatalf("DecodeRequest(%q) succeeded with an empty method", body)
	}
	enc, err := EncodeRequest(req)
	if err != nil {
		t.Fatalf("EncodeRequest(%+v) error = %v", req, err)
	}
	req2, err := DecodeRequest(enc)
	if err != nil {
		t.Fatalf("DecodeRequest(EncodeRequest(%q)) = %q, error = %v", body, enc, err)
	}
	if diff := cmp.Diff(req, req2, fuzzCmpOpts); diff != "" {
		t.Fatalf("request round trip of %q via %q (-want +got):\n%s", body, enc, diff)
	}
	enc2, err := EncodeRequest(req2)
	if err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("EncodeRequest is not stable: %q then %q (error %v)", enc, enc2, err)
	}
}

func checkParams(t *testing.T, body []byte, req *Request) {
	t.Helper()
	spec, ok := methods[req.Method]
	if !ok {
		return
	}
	// Every params decoder either succeeds or reports invalid params.
	for name, decode := range map[string]func() error{
		"DecodeGetTaskParams":   func() error { _, err := DecodeGetTaskParams(req.Params); return err },
		"DecodeTaskIDParams":    func() error { _, err := DecodeTaskIDParams(req.Params); return err },
		"DecodeListTasksParams": func() error { _, err := DecodeListTasksParams(req.Params); return err },
	} {
		if err := decode(); err != nil && !errors.Is(err, ErrInvalidParams) {
			t.Fatalf("%s(%q) error = %v, want ErrInvalidParams", name, req.Params, err)
		}
	}
	if spec.kind != mSend && spec.kind != mStream {
		return
	}
	p, err := DecodeSendParams(req.Params, spec.dialect)
	if err != nil {
		if !errors.Is(err, ErrInvalidParams) {
			t.Fatalf("DecodeSendParams(%q) error = %v, want ErrInvalidParams", req.Params, err)
		}
		return
	}
	re, err := encodeSendParamsForTest(p, spec.dialect)
	if err != nil {
		t.Fatalf("encode %+v: %v", p, err)
	}
	p2, err := DecodeSendParams(re, spec.dialect)
	if err != nil {
		t.Fatalf("DecodeSendParams(%s) of re-encoded params from %q: error = %v", re, body, err)
	}
	if diff := cmp.Diff(p, p2, fuzzCmpOpts); diff != "" {
		t.Fatalf("%v send params round trip of %q via %s (-want +got):\n%s", spec.dialect, req.Params, re, diff)
	}
}

// checkTransport serves body and checks that every answer is a JSON-RPC response (or
// SSE frames of them) that echoes the request id byte for byte.
func checkTransport(t *testing.T, h http.Handler, body []byte, req *Request) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("body %q: HTTP %d, want 200", body, w.Code)
	}
	var responses [][]byte
	if w.Header().Get("Content-Type") == "text/event-stream" {
		out := w.Body.String()
		if !strings.HasSuffix(out, "\n\n") {
			t.Fatalf("body %q: SSE output %q does not end with a blank line", body, out)
		}
		for _, block := range strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n") {
			for _, line := range strings.Split(block, "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					responses = append(responses, []byte(d))
				}
			}
		}
	} else {
		responses = append(responses, w.Body.Bytes())
	}
	if len(responses) == 0 {
		t.Fatalf("body %q: no response", body)
	}
	for _, b := range responses {
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatalf("body %q: response %q is not JSON: %v", body, b, err)
		}
		if resp.JSONRPC != "2.0" || (resp.Error == nil) == (len(resp.Result) == 0) {
			t.Fatalf("body %q: response %q is not a JSON-RPC response", body, b)
		}
		if !bytes.Equal(resp.ID, req.ID) {
			t.Fatalf("body %q: response id %s, want %s", body, resp.ID, req.ID)
		}
		if resp.Error != nil && resp.Error.Code == -32603 {
			t.Fatalf("body %q: internal error %q from a deterministic fake", body, b)
		}
	}
}

// FuzzWireEncoding checks the reflection-free encoders (jsonenc.go) against json.Marshal
// of the same wire values, for every event shape in both dialects: the same bytes, and an
// error exactly when json.Marshal fails (an invalid JSON value in a data part).
func FuzzWireEncoding(f *testing.F) {
	f.Add("hello", "ctx-1", `{"a": 1}`, []byte{1, 2}, "k", true, uint8(0))
	f.Add("<script>&\u2028\u2029\xff\x00\x1f\x7f\"\\\b\f\n\r\t", "", " { \"k\" : \"\u2028<&>\" } ", []byte{}, "", false, uint8(7))
	f.Add("", "é", "{bad", []byte(nil), "ü\xfe", true, uint8(255))
	f.Add("😀 \xed\xa0\x80", "t\t", "[ 1.50 , -0 , 1e3 ]", []byte{0, 255}, "x", false, uint8(3))
	f.Fuzz(func(t *testing.T, text, id, data string, raw []byte, key string, flag bool, shape uint8) {
		var meta map[string]any
		if shape&1 != 0 {
			meta = map[string]any{key: text, "n": 1.5, "b": flag, "l": []any{id, nil}}
		}
		parts := []Part{
			{Kind: PartText, Text: text, Metadata: meta},
			{Kind: PartData, Data: json.RawMessage(data)},
			{Kind: PartFile, Raw: raw, MediaType: key, Filename: id},
			{Kind: PartFile, URL: text, MediaType: id},
		}
		if shape&2 != 0 {
			parts = parts[:1]
		}
		if shape&4 != 0 {
			parts = nil
		}
		msg := Message{MessageID: id, ContextID: text, TaskID: key, Role: RoleAgent, Parts: parts, Metadata: meta}
		if shape&8 != 0 {
			msg.Extensions, msg.ReferenceTaskIDs = []string{text, key}, []string{id}
		}
		st := TaskStatus{State: StateWorking}
		if shape&16 != 0 {
			st.Message = &msg
		}
		art := Artifact{ArtifactID: id, Name: text, Description: key, Parts: parts, Metadata: meta}
		if shape&8 != 0 {
			art.Extensions = []string{key}
		}
		task := Task{ID: id, ContextID: key, Status: st, Metadata: meta}
		if shape&32 != 0 {
			task.Artifacts, task.History = []Artifact{art, art}, []Message{msg, msg}
		}
		for _, d := range []Dialect{V03, V1} {
			check := func(name string, got []byte, err error, v any) {
				t.Helper()
				want, wantErr := json.Marshal(v)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("%s (%s): error = %v, json.Marshal error = %v", name, d, err, wantErr)
				}
				if err == nil && !bytes.Equal(got, want) {
					t.Fatalf("%s (%s) =\n%s\njson.Marshal =\n%s", name, d, got, want)
				}
			}
			wt := encodeTask(&task, d)
			got, err := appendWireTask(nil, &wt)
			check("task", got, err, wt)
			wm := encodeMessage(&msg, d)
			got, err = appendWireMessage(nil, &wm)
			check("message", got, err, wm)
			su := encodeStatusUpdate(&StatusUpdate{TaskID: id, ContextID: key, Status: st, Final: flag, Metadata: meta}, d)
			got, err = appendWireStatusUpdate(nil, &su)
			check("statusUpdate", got, err, su)
			au := encodeArtifactUpdate(&ArtifactUpdate{TaskID: id, ContextID: key, Artifact: art, Append: flag, LastChunk: !flag, Metadata: meta}, d)
			got, err = appendWireArtifactUpdate(nil, &au)
			check("artifactUpdate", got, err, au)
			// EncodeEvent: bare in v0.3, wrapped in v1.0.
			got, err = EncodeEvent(&Event{Task: &task}, d)
			var want any = wt
			if d == V1 {
				want = map[string]any{"task": wt}
			}
			check("EncodeEvent", got, err, want)
		}
	})
}
