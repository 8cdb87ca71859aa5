package a2a

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// loneSurrogateError is the error of a request whose JSON text holds a lone surrogate
// escape at byte offset off (see jsonenc.CheckText): encoding/json would read it as
// U+FFFD, so that contextIds "u8-\ud800" and "u8-\udc00" would both be "u8-\ufffd", one
// conversation with a literal U+FFFD. It is refused, naming the field: in params an
// [ErrInvalidParams] (-32602) whose Field is the params path ("message.contextId",
// "message.parts[0].text"), elsewhere in the envelope an [ErrInvalidRequest]. body must
// be valid JSON.
func loneSurrogateError(body []byte, off int) *Error {
	path, key := jsonPathAt(body, off)
	esc := string(body[off:min(off+6, len(body))])
	what := "holds"
	if key {
		what = "has a member name that holds"
	}
	detail := what + " a lone UTF-16 surrogate escape (" + esc + " at byte offset " + strconv.Itoa(off) +
		"): a JSON string must pair surrogates (RFC 8259 §7), and an unpaired one would be read as U+FFFD"
	if len(path) > 0 && path[0] == "params" {
		field := strings.TrimPrefix(strings.Join(path[1:], "."), ".")
		field = strings.ReplaceAll(field, ".[", "[")
		if field == "" {
			field = "params"
		}
		return InvalidParams(field, "%s", detail)
	}
	field := strings.ReplaceAll(strings.Join(path, "."), ".[", "[")
	if field == "" {
		field = "the request"
	}
	return Errorf(ErrInvalidRequest, "%s %s", field, detail)
}

// jsonPathAt returns the path of the string of the JSON text body that holds byte offset
// off: member names and "[i]" array indexes from the top ("params", "message", "parts",
// "[0]", "text"); key is true when the string is a member name (the path then ends at its
// object). It returns nil when off is in no string.
func jsonPathAt(body []byte, off int) (path []string, key bool) {
	type frame struct {
		obj     bool
		wantKey bool   // obj: the next string is a member name
		name    string // obj: the current member's name
		idx     int    // array: the current element's index
	}
	var stack []frame
	elem := func(f frame) string {
		if f.obj {
			return f.name
		}
		return "[" + strconv.Itoa(f.idx) + "]"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for prev := int64(0); ; prev = dec.InputOffset() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:top]
			continue
		}
		if top >= 0 && stack[top].obj && stack[top].wantKey { // a member name
			name, _ := tok.(string)
			if int64(off) >= prev && int64(off) < dec.InputOffset() {
				for _, f := range stack[:top] {
					path = append(path, elem(f))
				}
				return path, true
			}
			stack[top].name, stack[top].wantKey = name, false
			continue
		}
		if top >= 0 { // a value starts in the top frame
			if stack[top].obj {
				stack[top].wantKey = true
			} else {
				stack[top].idx++
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true, wantKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{idx: -1})
			continue
		}
		if _, ok := tok.(string); ok && int64(off) >= prev && int64(off) < dec.InputOffset() {
			for _, f := range stack {
				path = append(path, elem(f))
			}
			return path, false
		}
	}
}
