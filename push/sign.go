package push

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SignatureHeader carries a delivery's signature: a JWS compact serialization (RFC 7515)
// signed with Ed25519 ("alg":"EdDSA"), whose claims are [Claims].
const SignatureHeader = "X-A2A-Signature"

// SigningExtension is the agent card extension (capabilities.extensions[].uri) whose
// params name the JWK Set of the key that signs push notifications ("jwksUrl") and
// the key id ("kid"): the A2A card has no field of its own for it.
const SigningExtension = "https://github.com/a2a-gateway/gateway/ext/push-signing/v1"

// JWKSPath is where the gateway publishes its signing key as a JWK Set (RFC 7517).
const JWKSPath = "/.well-known/jwks.json"

// ErrBadSignature is matched (errors.Is) by every error of [Verify].
var ErrBadSignature = errors.New("push signature invalid")

// Claims are what a delivery's signature asserts.
type Claims struct {
	// IssuedAt is when the attempt was signed (Unix seconds); each retry is signed anew.
	IssuedAt int64 `json:"iat"`
	// ID is the delivery's stable event id (also X-A2A-Event-Id): the same on every
	// retry, for de-duplication.
	ID        string `json:"jti"`
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id,omitempty"`
	// BodySHA256 is the base64url (unpadded) SHA-256 of the exact request body.
	BodySHA256 string `json:"body_sha256"`
}

// Signer signs deliveries with an Ed25519 key. It is safe for concurrent use.
type Signer struct {
	key ed25519.PrivateKey
	kid string
	jwk jwk
}

// jwk is an Ed25519 public key as a JWK (RFC 8037).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid,omitempty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
}

var b64 = base64.RawURLEncoding

// NewSigner returns a signer with key. Its key id is the key's JWK thumbprint (RFC 7638).
func NewSigner(key ed25519.PrivateKey) *Signer {
	x := b64.EncodeToString(key.Public().(ed25519.PublicKey))
	// RFC 7638: the required members, in lexicographic order, no whitespace.
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	kid := b64.EncodeToString(sum[:])
	return &Signer{key: key, kid: kid, jwk: jwk{Kty: "OKP", Crv: "Ed25519", X: x, Kid: kid, Use: "sig", Alg: "EdDSA"}}
}

// KeyID returns the key id ("kid") the signatures name and the JWKS lists.
func (s *Signer) KeyID() string { return s.kid }

// JWKS returns the public key as a JWK Set: {"keys":[{"kty":"OKP","crv":"Ed25519",…}]}.
func (s *Signer) JWKS() []byte {
	b, _ := json.Marshal(struct {
		Keys []jwk `json:"keys"`
	}{[]jwk{s.jwk}}) // cannot fail: strings only
	return b
}

// Sign returns the signature header value for d's body, issued at now.
func (s *Signer) Sign(d Delivery, now time.Time) string {
	sum := sha256.Sum256(d.Body)
	hdr, _ := json.Marshal(struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
		Kid string `json:"kid"`
	}{"EdDSA", "JWT", s.kid})
	claims, _ := json.Marshal(Claims{IssuedAt: now.Unix(), ID: d.ID, TaskID: d.TaskID, ContextID: d.ContextID, BodySHA256: b64.EncodeToString(sum[:])})
	input := b64.EncodeToString(hdr) + "." + b64.EncodeToString(claims)
	return input + "." + b64.EncodeToString(ed25519.Sign(s.key, []byte(input)))
}

// Verify checks a delivery's signature header value against the JWK Set jwks (the
// body of the gateway's GET /.well-known/jwks.json) and the exact request body: the
// JWS is well formed, its alg is EdDSA, its kid names an Ed25519 key of jwks, the
// signature is valid, and body_sha256 is the body's hash. It returns the claims;
// checking their iat for freshness and their jti for duplicates is the receiver's.
// Every error matches [ErrBadSignature].
func Verify(jwks []byte, headerValue string, body []byte) (Claims, error) {
	var c Claims
	parts := strings.Split(headerValue, ".")
	if len(parts) != 3 {
		return c, badSig("not a JWS compact serialization (want 3 dot-separated parts, got %d)", len(parts))
	}
	var hdr struct{ Alg, Kid string }
	if err := decodePart(parts[0], &hdr); err != nil {
		return c, badSig("header: %v", err)
	}
	if hdr.Alg != "EdDSA" {
		return c, badSig("alg %q: want EdDSA", hdr.Alg)
	}
	pub, err := findKey(jwks, hdr.Kid)
	if err != nil {
		return c, err
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return c, badSig("the signature does not verify with key %q", hdr.Kid)
	}
	if err := decodePart(parts[1], &c); err != nil {
		return c, badSig("claims: %v", err)
	}
	sum := sha256.Sum256(body)
	if subtle.ConstantTimeCompare([]byte(c.BodySHA256), []byte(b64.EncodeToString(sum[:]))) != 1 {
		return c, badSig("body_sha256 does not match the body")
	}
	return c, nil
}

func badSig(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadSignature}, args...)...)
}

func decodePart(part string, v any) error {
	b, err := b64.DecodeString(part)
	if err != nil {
		return errors.New("not base64url")
	}
	return json.Unmarshal(b, v)
}

// findKey returns the Ed25519 key of jwks whose kid is kid.
func findKey(jwks []byte, kid string) (ed25519.PublicKey, error) {
	var set struct{ Keys []jwk }
	if err := json.Unmarshal(jwks, &set); err != nil {
		return nil, badSig("the JWKS is not a JWK Set: %v", err)
	}
	for _, k := range set.Keys {
		if k.Kid != kid || k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := b64.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, badSig("key %q of the JWKS is not an Ed25519 public key", kid)
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, badSig("no Ed25519 key %q in the JWKS", kid)
}

// LoadKey reads an Ed25519 private key from a PEM file ("PRIVATE KEY", PKCS #8, as
// `openssl genpkey -algorithm ed25519` writes it). Errors: the file cannot be read
// (wrapping the os error), or holds no Ed25519 PKCS #8 key.
func LoadKey(path string) (*Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("push signing key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("push signing key %s: no PEM \"PRIVATE KEY\" block (create one with: openssl genpkey -algorithm ed25519 -out %s)", path, path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("push signing key %s: %w", path, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("push signing key %s: a %T, want an Ed25519 key (openssl genpkey -algorithm ed25519)", path, k)
	}
	return NewSigner(ek), nil
}

// LoadOrCreateKey reads the key at path (see [LoadKey]), or, when there is no file,
// creates a new key there (mode 0600, written and synced before it is used). Errors:
// those of LoadKey, or the file cannot be created.
func LoadOrCreateKey(path string) (*Signer, error) {
	s, err := LoadKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("push signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("push signing key: %w", err)
	}
	if err := writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadKey(path) // created meanwhile by another process
		}
		return nil, fmt.Errorf("push signing key: %w", err)
	}
	return NewSigner(key), nil
}

// writeNew writes b to a new file at path (mode 0600) through a temporary file, so that
// the key appears whole or not at all; an existing file is an fs.ErrExist error.
func writeNew(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".push-signing-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the link, or a failure: the temporary name goes
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path) // fails with fs.ErrExist if path exists
}
