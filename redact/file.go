package redact

import (
	"strings"
	"unicode/utf8"
)

// File returns the inline content of a file (an A2A file part's bytes) with the
// credentials it holds replaced as [Text] replaces them, when the content is text: its
// media type is text/* (any charset; bytes that are not UTF-8 are kept as they are), or
// it is valid UTF-8 whatever its media type says (JSON, YAML, an .env file sent as
// application/octet-stream). Other content, binary, comes back unchanged: a credential
// in it passes, as one does in base64 or compressed text. It also returns how many
// credentials it replaced (text content may change without one: Text drops invisible
// characters between printable ASCII characters); content is not modified.
func File(mediaType string, content []byte) ([]byte, int) {
	if len(content) == 0 || !isTextType(mediaType) && !utf8.Valid(content) {
		return content, 0
	}
	s, n := TextCount(string(content))
	if n == 0 && s == string(content) {
		return content, 0
	}
	return []byte(s), n
}

// isTextType reports whether a media type ("text/plain; charset=utf-8") is text/*.
func isTextType(mediaType string) bool {
	mt, _, _ := strings.Cut(mediaType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return strings.HasPrefix(mt, "text/")
}
