package conversations

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReplay_PastEnd (issue #15 item 13): a seq past the conversation's last entry is a
// *PastEndError naming the last seq; Replay answered the last turn before.
func TestReplay_PastEnd(t *testing.T) {
	t.Parallel()
	led, _ := openLedger(t)
	turn(t, led, "local", "c", "one")
	turn(t, led, "local", "c", "two") // seqs 1-4
	svc := New(led, Config{})
	for _, tc := range []struct {
		at      uint64
		wantErr *PastEndError
	}{
		{at: 4},
		{at: 5, wantErr: &PastEndError{ContextID: "c", Owner: "local", AtSeq: 5, LastSeq: 4}},
		{at: 9999, wantErr: &PastEndError{ContextID: "c", Owner: "local", AtSeq: 9999, LastSeq: 4}},
	} {
		_, err := svc.Replay(t.Context(), Ref{ContextID: "c"}, tc.at)
		if tc.wantErr == nil {
			if err != nil {
				t.Errorf("Replay(at %d) error = %v, want nil", tc.at, err)
			}
			continue
		}
		var pe *PastEndError
		if !errors.As(err, &pe) || !errors.Is(err, ErrPastEnd) {
			t.Fatalf("Replay(at %d) error = %v, want a *PastEndError", tc.at, err)
		}
		if diff := cmp.Diff(tc.wantErr, pe); diff != "" {
			t.Errorf("Replay(at %d) error (-want +got):\n%s", tc.at, diff)
		}
	}
}
