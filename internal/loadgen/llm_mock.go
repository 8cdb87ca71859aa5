package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// MockModel is the model behind `gateway bench --profile llm` (issue #40 item 4): an
// OpenAI-compatible Chat Completions endpoint (POST …/chat/completions, stream: true,
// answered as the API does: SSE chat.completion.chunk objects, a last chunk with
// finish_reason and usage, then "data: [DONE]") that streams Tokens tokens at Rate per
// second to every request. Each token's text is " k<seq>t<unix µs when it was written>",
// so a client on the same machine reads from the text itself how long the token took to
// reach it through the server under test, whichever server that is.
type MockModel struct {
	Rate   float64 // tokens per second (30 when 0)
	Tokens int     // tokens per reply (300 when 0: ten seconds at 30/s)
}

// ServeHTTP streams one reply. A request that is not a streaming chat completion gets
// 400 with an OpenAI-style error body.
func (m MockModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream bool `json:"stream"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&req); err != nil || !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"the bench model streams only: send stream: true","type":"invalid_request_error"}}`)
		return
	}
	rate, tokens := m.Rate, m.Tokens
	if rate <= 0 {
		rate = 30
	}
	if tokens <= 0 {
		tokens = 300
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	every := time.Duration(float64(time.Second) / rate)
	tick := time.NewTicker(every)
	defer tick.Stop()
	buf := make([]byte, 0, 256)
	for seq := 1; seq <= tokens; seq++ {
		if seq > 1 {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
		buf = appendTokenChunk(buf[:0], seq, time.Now())
		if _, err := w.Write(buf); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
	fmt.Fprintf(w, "data: {\"id\":\"bench\",\"object\":\"chat.completion.chunk\",\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"+
		"\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", tokens, tokens+10)
	if fl != nil {
		fl.Flush()
	}
}

// appendTokenChunk appends the SSE event of token seq, stamped at, to b.
func appendTokenChunk(b []byte, seq int, at time.Time) []byte {
	b = append(b, `data: {"id":"bench","object":"chat.completion.chunk","model":"bench","choices":[{"index":0,"delta":{"content":" k`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, 't')
	b = strconv.AppendInt(b, at.UnixMicro(), 10)
	return append(b, `"},"finish_reason":null}]}`+"\n\n"...)
}

// tokenStamps calls f with the seq and the stamp (unix µs) of every token "k<seq>t<µs>"
// in b (not preceded by a letter or digit: a server may cut a reply between a token's
// leading space and the rest), in order.
func tokenStamps(b []byte, f func(seq int, micros int64)) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 'k' || (i > 0 && isAlnum(b[i-1])) {
			continue
		}
		seq, j := digits(b, i+1)
		if j == i+1 || j >= len(b) || b[j] != 't' {
			continue
		}
		us, k := digits(b, j+1)
		if k == j+1 {
			continue
		}
		f(int(seq), us)
		i = k - 1
	}
}

func isAlnum(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' || c >= '0' && c <= '9' }

// digits reads the decimal number at b[i:]; it returns the value and the index after it.
func digits(b []byte, i int) (int64, int) {
	var v int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && v < 1<<58; i++ {
		v = v*10 + int64(b[i]-'0')
	}
	return v, i
}
