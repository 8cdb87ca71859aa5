package loadgen

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequestBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{{
		name: "v0.3 send",
		cfg:  Config{Dialect: DialectV03, Message: `hi "there"`},
		want: `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"kind":"message","role":"user",
			"messageId":"MID","contextId":"bench-r-3","parts":[{"kind":"text","text":"hi \"there\""}]}}}`,
	}, {
		name: "v0.3 stream",
		cfg:  Config{Dialect: DialectV03, Stream: true, Message: "x"},
		want: `{"jsonrpc":"2.0","id":7,"method":"message/stream","params":{"message":{"kind":"message","role":"user",
			"messageId":"MID","contextId":"bench-r-3","parts":[{"kind":"text","text":"x"}]}}}`,
	}, {
		name: "v1.0 send",
		cfg:  Config{Dialect: DialectV10, Message: "x"},
		want: `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"role":"ROLE_USER",
			"messageId":"MID","contextId":"bench-r-3","parts":[{"text":"x"}]}}}`,
	}, {
		name: "v1.0 stream",
		cfg:  Config{Dialect: DialectV10, Stream: true, Message: "x"},
		want: `{"jsonrpc":"2.0","id":7,"method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER",
			"messageId":"MID","contextId":"bench-r-3","parts":[{"text":"x"}]}}}`,
	}}
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl := newRequestTemplate(tt.cfg)
			ctxID, _ := json.Marshal(contextID("r", 3))
			body := tmpl.appendBody(nil, 7, 0xdeadbeef, ctxID)
			var got, want map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("request body %s does not decode: %v", body, err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatalf("want does not decode: %v", err)
			}
			msg := got["params"].(map[string]any)["message"].(map[string]any)
			if mid, _ := msg["messageId"].(string); !uuidRE.MatchString(mid) {
				t.Errorf("messageId = %q, want a UUID", mid)
			}
			msg["messageId"] = "MID"
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppendUUID_Unique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for hi := range uint64(3) {
		for lo := range uint64(1000) {
			s := string(appendUUID(nil, hi, lo))
			if seen[s] {
				t.Fatalf("appendUUID(%d, %d) = %s, seen before", hi, lo, s)
			}
			seen[s] = true
		}
	}
}

func TestContextIndexes(t *testing.T) {
	t.Parallel()
	for concurrency := 1; concurrency <= 9; concurrency++ {
		for contexts := 1; contexts <= 20; contexts++ {
			owner := map[int]int{}
			for w := range concurrency {
				idx := contextIndexes(contexts, concurrency, w)
				if len(idx) == 0 {
					t.Fatalf("contextIndexes(%d, %d, %d) is empty", contexts, concurrency, w)
				}
				for _, i := range idx {
					if i < 0 || i >= contexts {
						t.Fatalf("contextIndexes(%d, %d, %d) = %v, out of range", contexts, concurrency, w, idx)
					}
					if o, ok := owner[i]; ok && contexts >= concurrency {
						t.Fatalf("contexts %d, concurrency %d: index %d given to workers %d and %d", contexts, concurrency, i, o, w)
					}
					owner[i] = w
				}
			}
			if len(owner) != min(contexts, concurrency) && contexts < concurrency {
				t.Errorf("contexts %d, concurrency %d: %d indexes used, want %d", contexts, concurrency, len(owner), contexts)
			}
			if contexts >= concurrency && len(owner) != contexts {
				t.Errorf("contexts %d, concurrency %d: %d indexes used, want all %d", contexts, concurrency, len(owner), contexts)
			}
		}
	}
	for w := range 8 {
		if got := contextIndexes(1, 8, w); !cmp.Equal(got, []int{0}) {
			t.Errorf("contextIndexes(1, 8, %d) = %v, want [0]", w, got)
		}
	}
}

func TestDefaultMessage(t *testing.T) {
	t.Parallel()
	if len(benchSentence) != 64 || len(DefaultMessage) != 1024 {
		t.Errorf("len(benchSentence) = %d, len(DefaultMessage) = %d; want 64 and 1024", len(benchSentence), len(DefaultMessage))
	}
}
