package tools

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/a2a-gateway/gateway/agent"
)

// The environment an exec agent's command gets (see [turnTools.Env]).
const (
	EnvURL       = "GATEWAY_URL"        // this gateway's A2A URL
	EnvTurnToken = "GATEWAY_TURN_TOKEN" // the token of the current turn's tools
)

// ToolsPath is the route a turn-bound token calls the turn's tools on.
const ToolsPath = "/agent/v1/tools"

// maxToolRequest bounds a tool request's body.
const maxToolRequest = 64 << 10

// DefaultMaxHTTPCalls bounds the tool calls one turn's token makes when
// Config.MaxCalls is zero.
const DefaultMaxHTTPCalls = agent.DefaultMaxToolCalls

// turnTokens maps the sha256 of each live turn token to its turn's tools.
type turnTokens struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*turnTools
}

// issue makes tt's token and registers it until tt is closed.
func (ts *turnTokens) issue(tt *turnTools) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	tt.token = "gwt_" + base64.RawURLEncoding.EncodeToString(b[:])
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = make(map[[sha256.Size]byte]*turnTools)
	}
	ts.m[sha256.Sum256([]byte(tt.token))] = tt
}

func (ts *turnTokens) revoke(token string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.m, sha256.Sum256([]byte(token)))
}

func (ts *turnTokens) lookup(token string) (*turnTools, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	tt, ok := ts.m[sha256.Sum256([]byte(token))]
	return tt, ok
}

// Env implements agent.ToolEnv: the gateway's URL and the turn's token, valid until the
// turn's agent is done.
func (tt *turnTools) Env() []string {
	return []string{EnvURL + "=" + tt.box.cfg.Self, EnvTurnToken + "=" + tt.token}
}

// Close revokes the turn's token; the runner calls it when the agent is done.
func (tt *turnTools) Close() { tt.box.tokens.revoke(tt.token) }

// ToolRequest is the body of POST [ToolsPath].
type ToolRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResponse is its answer.
type ToolResponse struct {
	Result string `json:"result"`
}

// ServeHTTP serves POST [ToolsPath] for a process of the current turn: the bearer token
// names the turn; the call runs through the turn's tools (recorded, with the same hop,
// loop and per-peer limits) and counts against Config.MaxCalls. 401 for a token of no
// running turn, 400 for a body that is not a ToolRequest.
func (b *Box) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	tt, found := b.tokens.lookup(token)
	if !ok || !found {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gateway turn"`)
		http.Error(w, "no running turn has this token", http.StatusUnauthorized)
		return
	}
	var req ToolRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, maxToolRequest+1))
	if err != nil || len(body) > maxToolRequest || json.Unmarshal(body, &req) != nil || req.Tool == "" {
		http.Error(w, `want {"tool": NAME, "arguments": {...}} of at most 64 KiB`, http.StatusBadRequest)
		return
	}
	args := strings.TrimSpace(string(req.Arguments))
	if args == "" || args == "null" {
		args = "{}"
	}
	text := ""
	if n := tt.httpCalls.Add(1); int(n) > b.cfg.MaxCalls {
		text = fmt.Sprintf("refused: this turn's limit of %d tool calls is spent", b.cfg.MaxCalls)
	} else if text, err = tt.Call(r.Context(), agent.ToolCall{ID: fmt.Sprintf("http_%d", n), Name: req.Tool, Arguments: args}); err != nil {
		b.cfg.Logger.WarnContext(r.Context(), "a tool call over HTTP failed", "tool", req.Tool, "err", err)
		http.Error(w, "the call could not be recorded", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ToolResponse{Result: text})
}
