package turn

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
)

func chunk(text string, appendFlag, last bool) (string, string, bool, bool) {
	return "a", text, appendFlag, last
}

func drain(t *testing.T, s *logStream) []a2a.Event {
	t.Helper()
	var out []a2a.Event
	for {
		ev, err := s.Next(t.Context())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

func chunkText(evs []a2a.Event) (string, int) {
	var b strings.Builder
	n := 0
	for _, ev := range evs {
		if ev.Artifact != nil {
			n++
			b.WriteString(a2a.PartsText(ev.Artifact.Artifact.Parts))
		}
	}
	return b.String(), n
}

func TestLiveTaskCoalescesUnreadChunks(t *testing.T) {
	t.Parallel()
	lt := newLiveTask("t", "c", "local")
	lt.publish(a2a.Event{Task: &a2a.Task{ID: "t"}}, false)
	words := []string{"one ", "two ", "three ", "four"}
	for i, w := range words {
		lt.publishChunk(chunk(w, i > 0, i == len(words)-1))
	}
	lt.publish(a2a.Event{Status: &a2a.StatusUpdate{Final: true}}, true)
	evs := drain(t, lt.stream(0))
	text, n := chunkText(evs)
	if text != "one two three four" || n != 1 || len(evs) != 3 {
		t.Fatalf("unread chunks: %d events, %d chunk events, text %q; want one chunk event with all the text", len(evs), n, text)
	}
	if a := evs[1].Artifact; a.Append || !a.LastChunk {
		t.Fatalf("coalesced chunk append=%v lastChunk=%v, want false and true", a.Append, a.LastChunk)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
}

func TestLiveTaskNeverChangesWhatWasRead(t *testing.T) {
	t.Parallel()
	lt := newLiveTask("t", "c", "local")
	s := lt.stream(0)
	lt.publishChunk(chunk("a", false, false))
	first, err := s.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	lt.publishChunk(chunk("b", true, false))
	lt.publishChunk(chunk("c", true, true))
	lt.publish(a2a.Event{Status: &a2a.StatusUpdate{Final: true}}, true)
	if got := a2a.PartsText(first.Artifact.Artifact.Parts); got != "a" || first.Artifact.LastChunk {
		t.Fatalf("a chunk already read changed to %q (lastChunk %v)", got, first.Artifact.LastChunk)
	}
	rest := drain(t, s)
	text, n := chunkText(append([]a2a.Event{first}, rest...))
	if text != "abc" || n != 2 || !rest[0].Artifact.Append || !rest[0].Artifact.LastChunk {
		t.Fatalf("chunks %q in %d events (second append %v last %v); want abc in 2, the second appending and last", text, n, rest[0].Artifact.Append, rest[0].Artifact.LastChunk)
	}
	// A late reader from the start sees the same events with the same seqs.
	late := drain(t, lt.stream(0))
	lateText, lateN := chunkText(late)
	if lateText != text || lateN != n || late[1].Seq != rest[0].Seq {
		t.Fatalf("late reader: %q in %d events, want %q in %d with the same seqs", lateText, lateN, text, n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := lt.stream(uint64(len(late))).Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("reading past the end of a finished log = %v, want io.EOF", err)
	}
}
