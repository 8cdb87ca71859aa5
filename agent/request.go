package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/a2a-gateway/gateway/projection"
)

// chatRequest is the request a chat backend sends for t: t.Request, or, when the caller
// built none, the prompt (else the text) as the only user message, untrusted.
func chatRequest(t Turn) projection.Request {
	if len(t.Request.Messages) > 0 {
		return t.Request
	}
	return projection.Request{
		System:   t.Request.System,
		Messages: []projection.Message{{Role: projection.RoleUser, Content: promptText(t), Trust: projection.TrustPeerUntrusted}},
	}
}

// promptText is the single text a text backend is given for t: t.Prompt, else t.Request
// rendered as text, else t.Text.
func promptText(t Turn) string {
	switch {
	case t.Prompt != "":
		return t.Prompt
	case len(t.Request.Messages) > 0:
		return t.Request.Text()
	}
	return t.Text
}

// unsendable is the error for a request the projection's mapper refused: nothing was sent.
func unsendable(backend string, err error) error {
	if errors.Is(err, projection.ErrToolPairing) {
		return withCause(CauseHistory, backendError(backend, "a tool call and its result do not pair up; nothing was sent"))
	}
	return withCause(CauseHistory, backendError(backend, "the conversation cannot be sent as a request"))
}

// withJSONInt adds "key":v as the first member of the JSON object body, so that what the
// mapper put last (the messages) stays last.
func withJSONInt(body []byte, key string, v int) ([]byte, error) {
	return withJSONMember(body, key, strconv.AppendInt(nil, int64(v), 10))
}

// withJSONMember adds "key":value (value is JSON text) as the first member of the JSON
// object body.
func withJSONMember(body []byte, key string, value []byte) ([]byte, error) {
	body = bytes.TrimSpace(body)
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
		return nil, errors.New("request body is not a JSON object")
	}
	k, err := json.Marshal(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(k)+len(value)+2)
	out = append(out, '{')
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, value...)
	if len(bytes.TrimSpace(body[1:len(body)-1])) == 0 {
		return append(out, '}'), nil
	}
	out = append(out, ',')
	return append(out, body[1:]...), nil
}

// schema is a tool's parameter schema, an empty object schema when it has none.
func schema(s json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(s)) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return s
}
