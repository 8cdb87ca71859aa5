package ledger

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

func owners(cs []Conversation) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Owner)
	}
	return out
}

func TestConversationsByID(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		s := mustOpen(t, opts)
		mustAppend(t, s, "peer-b", "shared", userMsg("b"))
		mustAppend(t, s, "peer-a", "shared", userMsg("a"))
		mustAppend(t, s, "peer-a", "shared", userMsg("a again")) // not indexed twice
		mustAppend(t, s, "local", "other", userMsg("o"))
		mustAppend(t, s, "local", "shared/x", userMsg("prefix of nothing"))
		tests := []struct {
			id   string
			want []string
		}{
			{"shared", []string{"peer-a", "peer-b"}},
			{"other", []string{"local"}},
			{"nope", []string{}},
		}
		for _, tt := range tests {
			got, err := s.ConversationsByID(t.Context(), tt.id)
			if err != nil {
				t.Fatalf("ConversationsByID(%q) error = %v", tt.id, err)
			}
			if diff := cmp.Diff(tt.want, owners(got)); diff != "" {
				t.Errorf("ConversationsByID(%q) owners (-want +got):\n%s", tt.id, diff)
			}
			for _, c := range got {
				if c.ContextID != tt.id {
					t.Errorf("ConversationsByID(%q) gave contextId %q", tt.id, c.ContextID)
				}
			}
		}
		_, err := s.ConversationsByID(t.Context(), "")
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "contextId" || !errors.Is(err, ErrInvalid) {
			t.Errorf("ConversationsByID(\"\") error = %v, want a *FieldError on contextId", err)
		}
	})
}

// TestConversationsByID_BuiltAtOpen: a file written before the index existed gets it at
// Open, from its conversations' metadata.
func TestConversationsByID_BuiltAtOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, testOpts, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "peer-a", "c", userMsg("a"))
	mustAppend(t, s, "out:http://x.example/", "c", userMsg("x"))
	// An older build's file: no index bucket.
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketByID) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path, testOpts)
	got, err := s.ConversationsByID(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"out:http://x.example/", "peer-a"}, owners(got)); diff != "" {
		t.Errorf("owners after the rebuild (-want +got):\n%s", diff)
	}
	if _, err := s.VerifyAll(t.Context()); err != nil {
		t.Errorf("VerifyAll() = %v, want nil", err)
	}
}
