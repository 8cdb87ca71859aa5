package a2a

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// flushRecorder records, at each Flush, how many complete frames the body holds.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushedAt []int
}

func (w *flushRecorder) Flush() {
	w.flushedAt = append(w.flushedAt, strings.Count(w.Body.String(), "\n\n"))
	w.ResponseRecorder.Flush()
}

// readyFake is a fakeStream that is a ReadyStream: event i is ready as soon as event i-1
// was taken when together[i] is set (for i = 0: at once); the end is always ready.
type readyFake struct {
	*fakeStream
	together map[int]bool
	panics   bool
}

func (s *readyFake) Ready() bool {
	if s.panics {
		panic("Ready failed")
	}
	return s.i >= len(s.events) || s.together[s.i]
}

// TestSSEFlushesOncePerReadyGroup: events that a ReadyStream reports ready together leave
// in one flush (the headers with the first group), and each group is flushed before the
// transport waits for the next; a Stream that cannot tell is flushed after the headers
// and after every event, and so is one whose Ready panics.
func TestSSEFlushesOncePerReadyGroup(t *testing.T) {
	t.Parallel()
	events := goldenEvents()
	tests := []struct {
		name   string
		stream func() Stream
		want   []int // frames in the body at each flush
	}{
		{"ready groups", func() Stream {
			return &readyFake{fakeStream: newFakeStream(events...), together: map[int]bool{0: true, 1: true, 4: true}}
		}, []int{2, 3}},
		{"not a ReadyStream", func() Stream { return newFakeStream(events...) }, []int{0, 1, 2, 3, 4, 5}},
		{"Ready panics", func() Stream {
			return &readyFake{fakeStream: newFakeStream(events...), panics: true}
		}, []int{0, 1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := tt.stream()
			fake := &fakeHandler{stream: func(context.Context, *SendParams) (Stream, error) { return st, nil }}
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/",
				strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":`+v03Send+`}}`))
			r.Header.Set("Content-Type", "application/json")
			w := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
			NewJSONRPCHandler(fake, TransportConfig{Logger: discardLogger()}).ServeHTTP(w, r)
			if got := len(dataFrames(parseSSE(t, w.Body.String()))); got != len(events) {
				t.Fatalf("%d data frames, want %d: %q", got, len(events), w.Body.String())
			}
			if !slices.Equal(w.flushedAt, tt.want) {
				t.Errorf("frames at each flush = %v, want %v", w.flushedAt, tt.want)
			}
		})
	}
}
