package redact

import "testing"

func TestCut(t *testing.T) {
	t.Parallel()
	ph := "[redacted:github-token]"
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven cha…"},
		{"ab" + ph + "cd", 5, "ab" + ph + "…"},
		{"ab" + ph, 5, "ab" + ph},
		{"héllo wörld", 4, "héll…"},
	}
	for _, tc := range tests {
		if got := Cut(tc.in, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
