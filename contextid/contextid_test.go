package contextid

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"slash", "tenant/a", true},
		{"colon", "alice:bob/chat-1", true},
		{"umlaut", "über", true},
		{"dotdot", "../x", true},
		{"max", strings.Repeat("a", 256), true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", 257), false},
		{"bad utf8", "a\xffb", false},
		{"newline", "a\nb", false},
		{"nul", "a\x00b", false},
		{"c1 control", "a\u0085b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tt.id)
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(%q) = %v, want ok=%v", tt.id, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate(%q) error %v does not wrap ErrInvalid", tt.id, err)
			}
		})
	}
}

func TestKeyCollisions(t *testing.T) {
	t.Parallel()
	pairs := [][4]string{
		{"local", "tenant/a", "local", "tenanta"},
		{"local", "a/b", "local", "ab"},
		{"ab", "c", "a", "bc"}, // owner/contextId boundary must not shift
		{"peer-a", "x", "peer-b", "x"},
		{"local", Key("local", "x"), "local", "x"},
	}
	for _, p := range pairs {
		k1, k2 := Key(p[0], p[1]), Key(p[2], p[3])
		if k1 == k2 {
			t.Errorf("Key(%q,%q) == Key(%q,%q) = %s", p[0], p[1], p[2], p[3], k1)
		}
		if !IsCurrentKey(k1) || !IsCurrentKey(k2) {
			t.Errorf("IsCurrentKey(%q)/IsCurrentKey(%q) = false, want true", k1, k2)
		}
	}
	if Key("local", "x") != Key("local", "x") {
		t.Error("Key is not deterministic")
	}
	for _, bad := range []string{"v0/abc", "tenant/a", "v1/" + strings.Repeat("A", 64), "v1/zz"} {
		if IsCurrentKey(bad) {
			t.Errorf("IsCurrentKey(%q) = true, want false", bad)
		}
	}
}

func TestNewContextID(t *testing.T) {
	t.Parallel()
	a, b := New(), New()
	if a == b || !strings.HasPrefix(a, "ctx-") || Validate(a) != nil {
		t.Fatalf("New() = %q, %q", a, b)
	}
}
