package otlpwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// HTTPError is a collector's refusal of an export: a status other than 2xx. Body is the
// start of the response body (at most 512 bytes), for the log.
type HTTPError struct {
	URL        string
	StatusCode int
	Status     string
	Body       string
}

func (e *HTTPError) Error() string {
	body := e.Body
	if body == "" {
		body = "(empty)"
	}
	return fmt.Sprintf("post to %s: %s: body: %s", e.URL, e.Status, body)
}

// PartialSuccessError is a 2xx answer whose partial_success says the collector rejected
// spans (Rejected of the request's) or has a message; the rest were accepted. The
// SDK's exporter returns the same case as an error, which the SDK hands to its error
// handler: nothing is retried.
type PartialSuccessError struct {
	Rejected int64
	Message  string
}

func (e *PartialSuccessError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "empty message"
	}
	return fmt.Sprintf("OTLP partial success: %s (%d spans rejected)", msg, e.Rejected)
}

// partialSuccess reads a 2xx body: an ExportTraceServiceResponse in protobuf or JSON
// (by Content-Type; another type, or an empty body, is success).
func partialSuccess(resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("read the response: %w", err)
	}
	if len(b) > maxResponse {
		return fmt.Errorf("response body over %d bytes", maxResponse)
	}
	if len(b) == 0 {
		return nil
	}
	var ps PartialSuccessError
	switch ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct {
	case "application/x-protobuf":
		err = ps.fromProto(b)
	case "application/json":
		err = ps.fromJSON(b)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("decode the response: %w", err)
	}
	if ps.Rejected != 0 || ps.Message != "" {
		return &ps
	}
	return nil
}

// fromProto reads ExportTraceServiceResponse.partial_success (field 1):
// ExportTracePartialSuccess{rejected_spans = 1 (int64), error_message = 2}.
func (ps *PartialSuccessError) fromProto(b []byte) error {
	return eachField(b, func(n protowire.Number, t protowire.Type, v []byte) error {
		if n != 1 || t != protowire.BytesType {
			return nil
		}
		return eachField(v, func(n protowire.Number, t protowire.Type, v []byte) error {
			switch {
			case n == 1 && t == protowire.VarintType:
				x, _ := protowire.ConsumeVarint(v)
				ps.Rejected = int64(x)
			case n == 2 && t == protowire.BytesType:
				ps.Message = string(v)
			}
			return nil
		})
	})
}

// eachField calls fn with each field of the message b: its number, wire type, and its
// value (a varint's bytes, or a length-delimited field's content).
func eachField(b []byte, fn func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		n, t, tl := protowire.ConsumeTag(b)
		if tl < 0 {
			return protowire.ParseError(tl)
		}
		vl := protowire.ConsumeFieldValue(n, t, b[tl:])
		if vl < 0 {
			return protowire.ParseError(vl)
		}
		v := b[tl : tl+vl]
		if t == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(v)
		}
		if err := fn(n, t, v); err != nil {
			return err
		}
		b = b[tl+vl:]
	}
	return nil
}

// fromJSON reads the OTLP/JSON form: {"partialSuccess":{"rejectedSpans":"3","errorMessage":"…"}}
// (an int64 is a string in proto's JSON mapping; a number is accepted too).
func (ps *PartialSuccessError) fromJSON(b []byte) error {
	var r struct {
		PartialSuccess struct {
			RejectedSpans json.RawMessage `json:"rejectedSpans"`
			ErrorMessage  string          `json:"errorMessage"`
		} `json:"partialSuccess"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	ps.Message = r.PartialSuccess.ErrorMessage
	if n := bytes.Trim(r.PartialSuccess.RejectedSpans, `"`); len(n) > 0 {
		v, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return fmt.Errorf("rejectedSpans: %w", err)
		}
		ps.Rejected = v
	}
	return nil
}
