// Package redacttest holds test fixtures for credential redaction, shared by the tests of
// every package that redacts (redact, projection, the write paths): one typical case per
// kind of credential. It is imported by tests only.
package redacttest

import (
	"fmt"
	"strings"
)

// Credential is a text holding one credential: Secret is the part that must never be
// stored or reach a model, Want the placeholder that replaces it.
type Credential struct {
	Name, Text, Secret, Want string
}

// Credentials has one case per kind of credential redact.Text knows, each in a typical
// context.
var Credentials = []Credential{
	{"openai legacy", "export OPENAI_API_KEY=sk-T3BlbkFJ4xQz9aB7cD2eF5gH8iJ1kL0mN3oP6qR", "T3BlbkFJ4xQz9aB7cD2eF5gH8iJ1kL0mN3oP6qR", "[redacted:openai-key]"},
	{"openai project", "key: sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90_Uv-Wx", "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90", "[redacted:openai-key]"},
	{"anthropic", "ANTHROPIC_API_KEY=\"sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AAAA\"", "api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", "[redacted:anthropic-key]"},
	{"github classic", "git clone https://x:ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8@github.com/o/r", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "[redacted:url-password]"},
	{"github token", "token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 works", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "[redacted:github-token]"},
	{"github oauth", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a", "[redacted:github-token]"},
	{"github fine-grained", "GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789", "11ABCDEFG0123456789_abcdefghij", "[redacted:github-token]"},
	{"slack bot", "SLACK_BOT_TOKEN=xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "[redacted:slack-token]"},
	{"slack user", "xoxp-2222222222-3333333333-444444444444-abcdef0123456789abcdef", "444444444444-abcdef0123456789", "[redacted:slack-token]"},
	{"google", "maps key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY end", "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "[redacted:google-api-key]"},
	{"stripe live", "Stripe.api_key = 'sk_live_51HbCdEfGhIjKlMnOpQrStUv'", "51HbCdEfGhIjKlMnOpQrStUv", "[redacted:stripe-key]"},
	{"stripe restricted", "rk_live_51HbCdEfGhIjKlMnOpQrStUvWx", "51HbCdEfGhIjKlMnOpQrStUvWx", "[redacted:stripe-key]"},
	{"bearer header", "curl -H 'Authorization: Bearer abc.def-ghi' https://api", "abc.def-ghi", "[redacted:bearer-token]"},
	{"bearer json header", `{"headers": {"authorization": "bearer eyJhbGciOiJIUzI1NiJ9x"}}`, "eyJhbGciOiJIUzI1NiJ9x", "[redacted:bearer-token]"},
	{"bearer long", "use Bearer 0123456789abcdefghijKLMNOPQRST== for it", "0123456789abcdefghijKLMNOPQRST", "[redacted:bearer-token]"},
	{"bearer escaped in json", `{"req":"{\"Authorization\": \"Bearer tok3n-value-9\"}"}`, "tok3n-value-9", "[redacted:bearer-token]"},
	{"basic auth", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA", "[redacted:basic-credentials]"},
	{"private key", "here:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98xKEYSECRET\nQUJDREVGR0g=\n-----END RSA PRIVATE KEY-----\nthanks", "MIIEowIBAAKCAQEA7bq98xKEYSECRET", "[redacted:private-key]"},
	{"openssh key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUSECRET\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUSECRET", "[redacted:private-key]"},
	{"unterminated key", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQUNTERMINATED", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQUNTERMINATED", "[redacted:private-key]"},
	{"aws access key id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "[redacted:aws-access-key-id]"},
	{"aws session key id", "ASIAY34FZKBOKMUTVV7A was issued", "ASIAY34FZKBOKMUTVV7A", "[redacted:aws-access-key-id]"},
	{"aws secret env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "[redacted:aws-secret-key]"},
	{"aws secret json", `{"SecretAccessKey": "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"}`, "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY", "[redacted:aws-secret-key]"},
	{"url password", "DATABASE_URL=postgres://app:s3cr3t-P@ss@db.internal:5432/app", "s3cr3t-P", "[redacted:url-password]"},
	{"url password redis", "redis://default:hunter2hunter2@cache:6379", "hunter2hunter2", "[redacted:url-password]"},
	{"jwt", "session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "[redacted:jwt]"},
}

// Invisible has one code point of each kind that draws nothing (Unicode
// Default_Ignorable_Code_Point, and format characters): inserted inside a credential,
// it must not hide it from redaction (issue 35 item 7). The first three are the ones
// found passing: U+034F, U+3164, U+FE0F.
var Invisible = []rune{
	'\u034f',     // COMBINING GRAPHEME JOINER (Mn)
	'\u3164',     // HANGUL FILLER (Lo)
	'\ufe0f',     // VARIATION SELECTOR-16 (Mn)
	'\u00ad',     // SOFT HYPHEN (Cf)
	'\u061c',     // ARABIC LETTER MARK (Cf)
	'\u115f',     // HANGUL CHOSEONG FILLER (Lo)
	'\u1160',     // HANGUL JUNGSEONG FILLER (Lo)
	'\u17b4',     // KHMER VOWEL INHERENT AQ (Mn)
	'\u180b',     // MONGOLIAN FREE VARIATION SELECTOR ONE (Mn)
	'\u180e',     // MONGOLIAN VOWEL SEPARATOR (Cf)
	'\u200b',     // ZERO WIDTH SPACE (Cf)
	'\u202e',     // RIGHT-TO-LEFT OVERRIDE (Cf)
	'\u2064',     // INVISIBLE PLUS (Cf)
	'\u2065',     // reserved, default ignorable (Cn)
	'\ufe00',     // VARIATION SELECTOR-1 (Mn)
	'\ufeff',     // ZERO WIDTH NO-BREAK SPACE (Cf)
	'\uffa0',     // HALFWIDTH HANGUL FILLER (Lo)
	'\ufff0',     // reserved, default ignorable (Cn)
	'\U0001bca0', // SHORTHAND FORMAT LETTER OVERLAP (Cf)
	'\U0001d173', // MUSICAL SYMBOL BEGIN BEAM (Cf)
	'\U000e0041', // TAG LATIN CAPITAL LETTER A (Cf)
	'\U000e0100', // VARIATION SELECTOR-17 (Mn)
	'\U000e0fff', // reserved, default ignorable (Cn)
}

// Hidden returns c with r inserted in the middle of its secret: the text still reads
// as the credential, and Secret becomes what must not survive (with r inside).
func Hidden(c Credential, r rune) Credential {
	k := len(c.Secret) / 2
	hidden := c.Secret[:k] + string(r) + c.Secret[k:]
	c.Name += " with " + fmt.Sprintf("U+%04X", r)
	c.Text = strings.Replace(c.Text, c.Secret, hidden, 1)
	c.Secret = hidden
	return c
}
