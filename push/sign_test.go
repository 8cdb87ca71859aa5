package push

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	s := testSigner()
	d := Delivery{ID: "ev-1", TaskID: "task-1", ContextID: "ctx-1", Body: []byte(`{"x":1}`)}
	sig := s.Sign(d, time.Unix(1700000000, 0))
	c, err := Verify(s.JWKS(), sig, d.Body)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if c != (Claims{IssuedAt: 1700000000, ID: "ev-1", TaskID: "task-1", ContextID: "ctx-1", BodySHA256: c.BodySHA256}) || c.BodySHA256 == "" {
		t.Errorf("claims %+v", c)
	}
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 1
	other := NewSigner(ed25519.NewKeyFromSeed(seed))
	parts := strings.Split(sig, ".")
	tests := map[string]struct {
		jwks []byte
		sig  string
		body []byte
		why  string
	}{
		"changed body":  {s.JWKS(), sig, []byte(`{"x":2}`), "body_sha256"},
		"other key":     {other.JWKS(), sig, d.Body, "no Ed25519 key"},
		"not a JWS":     {s.JWKS(), "abc", d.Body, "3 dot-separated parts"},
		"alg none":      {s.JWKS(), b64.EncodeToString([]byte(`{"alg":"none","kid":"`+s.KeyID()+`"}`)) + "." + parts[1] + ".", d.Body, `alg "none"`},
		"changed claim": {s.JWKS(), parts[0] + "." + b64.EncodeToString([]byte(`{"jti":"ev-2"}`)) + "." + parts[2], d.Body, "does not verify"},
		"bad JWKS":      {[]byte(`[]`), sig, d.Body, "not a JWK Set"},
	}
	for name, tt := range tests {
		_, err := Verify(tt.jwks, tt.sig, tt.body)
		if !errors.Is(err, ErrBadSignature) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("%s: Verify = %v, want ErrBadSignature saying %q", name, err, tt.why)
		}
	}
}

func TestJWKS(t *testing.T) {
	t.Parallel()
	s := testSigner()
	var set struct{ Keys []map[string]string }
	if err := json.Unmarshal(s.JWKS(), &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("JWKS %s: %v", s.JWKS(), err)
	}
	k := set.Keys[0]
	if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["kid"] != s.KeyID() || k["x"] == "" {
		t.Errorf("JWK %v", k)
	}
	// RFC 8037 appendix A.3: the thumbprint of the RFC's example key.
	x := "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	pub, _ := b64.DecodeString(x)
	seed, _ := b64.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	key := ed25519.NewKeyFromSeed(seed)
	if string(key.Public().(ed25519.PublicKey)) != string(pub) {
		t.Fatal("RFC 8037 example key mismatch")
	}
	if got := NewSigner(key).KeyID(); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Errorf("kid %s, want the RFC 8037 A.3 thumbprint", got)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "push-signing.key")
	if _, err := LoadKey(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadKey of a missing file: %v, want fs.ErrNotExist", err)
	}
	s1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, fi.Mode())
	}
	s2, err := LoadOrCreateKey(path)
	if err != nil || s2.KeyID() != s1.KeyID() {
		t.Errorf("reload: %v, kid %s; want the same key %s", err, s2.KeyID(), s1.KeyID())
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the key", len(entries))
	}
	bad := filepath.Join(t.TempDir(), "bad.key")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(bad); err == nil || !strings.Contains(err.Error(), "openssl genpkey") {
		t.Errorf("LoadOrCreateKey of a bad file: %v, want an error saying how to make one", err)
	}
}
