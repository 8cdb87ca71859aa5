package projection

import (
	"fmt"
	"strings"
	"testing"
)

// credentialCorpus has one entry per kind of credential Redact knows, each in a typical
// context: secret is the part that must never reach a model, want the placeholder.
var credentialCorpus = []struct {
	name   string
	text   string
	secret string
	want   string
}{
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

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, c := range credentialCorpus {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := Redact(c.text)
			if strings.Contains(got, c.secret) {
				t.Errorf("Redact(%q) = %q, still contains %q", c.text, got, c.secret)
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("Redact(%q) = %q, want it to contain %q", c.text, got, c.want)
			}
			if again := Redact(got); again != got {
				t.Errorf("Redact not idempotent: %q then %q", got, again)
			}
		})
	}
}

// TestRedact_KeepsContext: what surrounds a credential stays.
func TestRedact_KeepsContext(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"Authorization: Bearer abc123", "Authorization: Bearer [redacted:bearer-token]"},
		{"postgres://app:pw@db/x", "postgres://app:[redacted:url-password]@db/x"},
		{"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok", "AWS_SECRET_ACCESS_KEY=[redacted:aws-secret-key] ok"},
		{"a sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12 b", "a [redacted:openai-key] b"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRedact_LeavesOrdinaryText: text without credentials passes unchanged.
func TestRedact_LeavesOrdinaryText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"Please review the task-management module and ask-me-anything docs.",
		"The bearer of this letter is welcome.",
		"Authorization is required for this endpoint.",
		"see https://example.com/path?q=1 and mailto:a@b.c",
		"git@github.com:owner/repo.git",
		"AKIA is a prefix; AKIAshort is not a key.",
		"the secret key to success is patience",
		"sk-short",
		"-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
	} {
		if got := Redact(s); got != s {
			t.Errorf("Redact(%q) = %q, want it unchanged", s, got)
		}
	}
}

// TestBuild_RedactsEverywhere: every kind of credential, whether in the peer's current
// message, in a prior agent reply, in a tool result or in tool-call arguments, is absent
// from every rendering.
func TestBuild_RedactsEverywhere(t *testing.T) {
	t.Parallel()
	places := []string{"current peer message", "prior peer message", "prior agent reply", "tool result", "tool arguments"}
	for _, c := range credentialCorpus {
		for _, place := range places {
			t.Run(c.name+"/"+place, func(t *testing.T) {
				t.Parallel()
				hist := []Item{userItem(1, "first question"), replyItem(2, "first answer")}
				cur := current("what now?")
				switch place {
				case "current peer message":
					cur.Text = "my config: " + c.text
				case "prior peer message":
					hist[0].Text = "my config: " + c.text
				case "prior agent reply":
					hist[1].Text = "I found: " + c.text
				case "tool result", "tool arguments":
					args := `{"path":"/etc/app.env"}`
					result := "file content:\n" + c.text
					if place == "tool arguments" {
						args = fmt.Sprintf(`{"env": %q}`, c.text)
						result = "ok"
					}
					hist = append(hist[:1],
						Item{Seq: 2, Kind: KindToolCall, Trust: TrustAgent, Visibility: VisibilityModel, ToolCallID: "c1", ToolName: "read", ToolArgs: args},
						Item{Seq: 3, Kind: KindToolResult, Trust: TrustPeerUntrusted, Visibility: VisibilityModel, ToolCallID: "c1", Text: result},
						replyItem(4, "first answer"))
				}
				req, st := mustBuild(t, hist, cur, Policy{HistoryLimit: 20})
				if st.Redactions == 0 {
					t.Errorf("Stats.Redactions = 0, want at least 1")
				}
				for form, out := range render(t, req).all() {
					if strings.Contains(out, c.secret) {
						t.Errorf("%s contains the secret %q:\n%s", form, c.secret, out)
					}
					if !strings.Contains(out, "[redacted:") {
						t.Errorf("%s has no redaction placeholder", form)
					}
				}
			})
		}
	}
}

// TestCandidates: the one-pass literal filter agrees with a search per literal on texts
// that hold each literal, in every case, at the start, in the middle and at the end, alone
// and with others; and a filter that missed a literal would let a credential through.
func TestCandidates(t *testing.T) {
	t.Parallel()
	var texts []string
	for _, r := range redactors {
		for _, w := range append(append([]string{}, r.anyOf...), r.allOf...) {
			for _, v := range []string{w, strings.ToUpper(w), w[:len(w)-1], "x" + w + "y"} {
				texts = append(texts, v, "The quick brown fox "+v, v+" jumps", "_ "+v+" gh")
			}
		}
	}
	for _, c := range credentialCorpus {
		texts = append(texts, c.text, strings.ToUpper(c.text), strings.ToLower(c.text))
	}
	texts = append(texts, "", "ſecret_key = "+strings.Repeat("A", 40), "\u212aey")
	for _, s := range texts {
		checkCandidates(t, s)
		if got, want := Redact(s), redactAll(s); got != want {
			t.Errorf("Redact(%q) = %q, running every pattern gives %q", s, got, want)
		}
	}
	if c := candidates("The quick brown fox jumps over the lazy dog; a bench echoes it. "); c != 0 {
		t.Errorf("candidates(plain English) = %b, want none", c)
	}
}
