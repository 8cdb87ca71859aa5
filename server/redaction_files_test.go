package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// base64Needles returns, for a secret, the base64 text that any base64 encoding of a
// content holding it contains (one per alignment of the secret to the 3-byte groups).
func base64Needles(secret string) []string {
	var out []string
	for k := range 3 {
		sub := secret[k:]
		sub = sub[:len(sub)/3*3]
		out = append(out, base64.StdEncoding.EncodeToString([]byte(sub)))
	}
	return out
}

// TestRedactionFileAndDataParts (issue 35 item 7): a credential in a file part's inline
// bytes (a text/plain file in v0.3, a JSON file sent as application/octet-stream in
// v1.0), in a data part, and one with an invisible character other than a format
// character inside (U+3164, U+034F, U+FE0F) is neither stored nor echoed: checked in
// clear and in base64 on the answers and on the bytes of the ledger file after Close.
// Before the fix the file bytes and the keys with those characters were stored verbatim.
func TestRedactionFileAndDataParts(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	// Each secret in two fragments (see fragments); the file and data ones are sent
	// whole, the others with their invisible character between the fragments, which
	// are too short to be a key alone.
	secrets := map[string][2]string{
		"v0.3 text/plain bytes":  {"sk-proj-F1l3Byt3sT", "3xtPl41nAbCdEfGhIjKl"},
		"v1.0 octet-stream JSON": {"ghp_F1l3Byt3sJ", "s0nAbCdEfGhIjKlMnOpQrSt"},
		"data part":              {"sk-proj-D4t4P4rtS3", "cr3tAbCdEfGhIjKlMnOp"},
		"U+3164":                 {"sk-proj-H4ngulF1", "ll3rAbCdEfGhIjKlMnOp"},
		"U+034F":                 {"ghp_C0mb1n1ngG", "r4ph3m3J01n3rAbCdEfGh"},
		"U+FE0F":                 {"sk-proj-V4r14t10", "nS3l3ct0rAbCdEfGhIjKl"},
	}
	invisible := map[string]string{"U+3164": "\u3164", "U+034F": "\u034f", "U+FE0F": "\ufe0f"}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	textPart := func(s string) string {
		b, _ := json.Marshal(map[string]any{"kind": "text", "text": s})
		return string(b)
	}
	var answers [][]byte
	answers = append(answers, postRaw(t, c, s.URL(), v03Send("file-v03", "file-v03", `[`+textPart("see the file")+
		`,{"kind":"file","file":{"name":"keys.env","mimeType":"text/plain","bytes":"`+b64("OPENAI_API_KEY="+whole(secrets["v0.3 text/plain bytes"])+"\n")+`"}}]`)))
	v1 := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"file-v1","contextId":"file-v1","parts":[` +
		`{"text":"see the JSON"},{"raw":"` + b64(`{"token":"`+whole(secrets["v1.0 octet-stream JSON"])+`"}`) + `","mediaType":"application/octet-stream","filename":"t.json"}]}}}`
	answers = append(answers, postRawV1(t, c, s.URL(), v1))
	answers = append(answers, postRaw(t, c, s.URL(), v03Send("data-part", "data-part", `[`+textPart("see the data")+
		`,{"kind":"data","data":{"config":{"keys":["`+whole(secrets["data part"])+`"]}}}]`)))
	for name, r := range invisible {
		sec := secrets[name]
		answers = append(answers, postRaw(t, c, s.URL(), v03Send("inv-"+name, "inv-"+name, "["+textPart("token "+sec[0]+r+sec[1]+" ok")+"]")))
	}
	for _, a := range answers {
		if bytes.Contains(a, []byte(`"error"`)) {
			t.Errorf("answer %s, want the task", a)
		}
	}
	stopServer(t, s)
	raw, err := os.ReadFile(filepath.Join(cfg.DataDir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	stored := exportAll(t, filepath.Join(cfg.DataDir, "ledger.db"), []string{"see the file", "see the JSON", "see the data", "token "})
	all := bytes.Join(answers, nil)
	for name, sec := range secrets {
		needles := fragments(sec)
		for _, f := range fragments(sec) {
			if len(f) >= 12 {
				needles = append(needles, base64Needles(f)...)
			}
		}
		for _, n := range needles {
			for what, b := range map[string][]byte{"the ledger file": raw, "an entry": stored, "an answer": all} {
				if bytes.Contains(b, []byte(n)) {
					t.Errorf("%s: %s holds %q (of %q)", name, what, n, whole(sec))
				}
			}
		}
	}
}

// postRawV1 is postRaw with A2A-Version: 1.0.
func postRawV1(t *testing.T, c *http.Client, url, body string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}
