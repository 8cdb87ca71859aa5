package loadgen

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTokenStamps(t *testing.T) {
	type tok struct {
		Seq int
		US  int64
	}
	for _, tc := range []struct {
		in   string
		want []tok
	}{
		{`{"text":" k1t1700000000000001"}`, []tok{{1, 1700000000000001}}},
		{`"text":"k2t1700000000000002 k3t1700000000000003 "`, []tok{{2, 1700000000000002}, {3, 1700000000000003}}}, // cut after a token's space
		{`{"kind":"task","taskId":"k9","id":"ak1t5"}`, nil},                                                        // no stamp, or inside a word
		{`k12t`, nil},
	} {
		var got []tok
		tokenStamps([]byte(tc.in), func(seq int, us int64) { got = append(got, tok{seq, us}) })
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("tokenStamps(%s) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestTokenTrackCountsEachTokenOnce: the final text repeating the reply adds no delays.
func TestTokenTrackCountsEachTokenOnce(t *testing.T) {
	tr := &tokenTrack{}
	now := time.Now().UnixMicro()
	for _, f := range []string{
		`{"result":{"kind":"artifact-update","artifact":{"parts":[{"text":" k1t` + itoa(now) + `"}]}}}`,
		`{"result":{"kind":"artifact-update","artifact":{"parts":[{"text":" k2t` + itoa(now) + `"}]}}}`,
		`{"result":{"kind":"status-update","status":{"message":{"parts":[{"text":" k1t` + itoa(now-9e6) + ` k2t` + itoa(now-9e6) + `"}]}},"final":true}}`,
	} {
		if err := tr.frame([]byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if len(tr.delays) != 2 || !tr.done || tr.delays[0] > time.Second {
		t.Fatalf("delays %v done %v: want 2 small delays and done", tr.delays, tr.done)
	}
	if err := tr.frame([]byte(`{"error":{"code":-32000}}`)); err == nil {
		t.Error("an error event is not an error")
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestMockModelWire: the mock answers as the Chat Completions API streams: chunk objects,
// a last chunk with finish_reason and usage, then [DONE]; a request without stream: true
// gets 400.
func TestMockModelWire(t *testing.T) {
	srv := httptest.NewServer(MockModel{Rate: 1000, Tokens: 3})
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" || len(data) != 5 || data[4] != "[DONE]" ||
		!strings.Contains(data[3], `"finish_reason":"stop"`) || !strings.Contains(data[3], `"completion_tokens":3`) {
		t.Fatalf("stream %q", data)
	}
	seqs := 0
	for _, d := range data[:3] {
		tokenStamps([]byte(d), func(seq int, _ int64) { seqs += seq })
	}
	if seqs != 1+2+3 {
		t.Errorf("token seqs sum %d, want 6", seqs)
	}
	bad, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("non-streaming request: HTTP %d, want 400", bad.StatusCode)
	}
}
