package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/projection"
	"github.com/google/go-cmp/cmp"
)

// Stream events exactly as the Messages API writes them.
const (
	anMessageStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n"
	anBlockStart   = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	anPing         = "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	anBlockStop    = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	anMessageDelta = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n"
	anMessageStop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func anDelta(text string) string {
	c, _ := json.Marshal(text)
	return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":" + string(c) + "}}\n\n"
}

func anStream(deltas ...string) []string {
	ev := []string{anMessageStart, anBlockStart, anPing}
	for _, d := range deltas {
		ev = append(ev, anDelta(d))
	}
	return append(ev, anBlockStop, anMessageDelta, anMessageStop)
}

func newTestAnthropic(t *testing.T, u *upstream, cfg AnthropicConfig) (*Anthropic, *logBuffer) {
	t.Helper()
	logger, logs := testLogger()
	cfg.URL = u.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "claude-sonnet-4-5"
	}
	a, err := NewAnthropic(cfg, logger)
	if err != nil {
		t.Fatalf("NewAnthropic() error = %v", err)
	}
	a.h.retryBase = time.Millisecond // retries of refusals that name no wait (retry_test.go)
	t.Cleanup(func() { a.Close() })
	return a, logs
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	deltas := []string{"Hello", ", ", "世界", " 🎉", "！"}
	firstSeen := make(chan struct{})
	u := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, anMessageStart, anBlockStart, anPing, anDelta(deltas[0]))
		// The rest is sent only once the first delta reached the caller: the reply streams.
		select {
		case <-firstSeen:
		case <-r.Context().Done():
			return
		}
		for _, d := range deltas[1:] {
			sse(w, anDelta(d), anPing)
		}
		sse(w, anBlockStop, anMessageDelta, anMessageStop)
	})
	a, _ := newTestAnthropic(t, u, AnthropicConfig{APIKey: testKey, Timeout: 10 * time.Second})
	var got []string
	res, err := a.Reply(t.Context(), chatTurn, func(c string) error {
		if len(got) == 0 {
			close(firstSeen)
		}
		got = append(got, c)
		return nil
	})
	if err != nil || res.InputRequired {
		t.Fatalf("Reply() = %+v, %v, want no error", res, err)
	}
	if diff := cmp.Diff(deltas, got); diff != "" {
		t.Errorf("emitted chunks (-want +got):\n%s", diff)
	}

	path, header, body := u.request()
	if path != "/v1/messages" {
		t.Errorf("path = %q, want /v1/messages", path)
	}
	for k, want := range map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json", "Authorization": ""} {
		if got := header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	// The body is the projection's mapping, as it is.
	mapped, err := chatTurn.Request.Anthropic("claude-sonnet-4-5", 1024, true)
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != string(mapped) {
		t.Errorf("body = %s\nwant %s", body, mapped)
	}
	var req struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		System    []struct {
			Text string `json:"text"`
		} `json:"system"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body %s: %v", body, err)
	}
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	if req.Model != "claude-sonnet-4-5" || req.MaxTokens != 1024 || !req.Stream || len(req.System) != 1 || req.System[0].Text != "Be brief." ||
		!cmp.Equal(roles, []string{"user", "assistant", "user"}) {
		t.Errorf("request = %+v, want the model, max_tokens 1024, stream, the system prompt apart and three messages", req)
	}
}

func TestAnthropicReplies(t *testing.T) {
	t.Parallel()
	toolTurn := Turn{Request: projection.Request{Messages: []projection.Message{
		{Role: projection.RoleUser, Content: "weather?"},
		{Role: projection.RoleAssistant, Content: "checking", ToolCalls: []projection.ToolCall{
			{ID: "toolu_1", Name: "weather", Arguments: `{"city":"Paris"}`},
			{ID: "toolu_2", Name: "time", Arguments: ""},
		}},
		{Role: projection.RoleTool, ToolCallID: "toolu_2", Content: "noon"},
		{Role: projection.RoleTool, ToolCallID: "toolu_1", Content: "sunny"},
		{Role: projection.RoleUser, Content: "thanks"},
	}}}
	tests := []struct {
		name     string
		cfg      AnthropicConfig
		turn     Turn
		events   []string
		want     []string
		wantIR   bool
		wantBody *projection.Request // the request whose mapping must be the body, with the config's model and max tokens
	}{
		{
			name:     "tool calls and results as content blocks",
			cfg:      AnthropicConfig{Version: "2024-01-01", MaxTokens: 99},
			turn:     toolTurn,
			events:   anStream("ok"),
			want:     []string{"ok"},
			wantBody: &toolTurn.Request,
		},
		{
			name:     "prompt as the only message when the turn has no request",
			turn:     Turn{Prompt: "just the prompt"},
			events:   anStream("ok"),
			want:     []string{"ok"},
			wantBody: &projection.Request{Messages: []projection.Message{{Role: projection.RoleUser, Content: "just the prompt", Trust: projection.TrustPeerUntrusted}}},
		},
		{
			name:   "input-required marker split across deltas",
			turn:   chatTurn,
			events: anStream("\n[INPUT_REQ", "UIRED]", "\nWhich", " one?"),
			want:   []string{"Which", " one?"}, wantIR: true,
		},
		{
			name: "thinking and tool-input deltas are not reply text",
			turn: chatTurn,
			events: []string{anMessageStart,
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n",
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\"\"}}\n\n",
				anDelta("answer"), anMessageDelta, anMessageStop},
			want: []string{"answer"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t, func(_ *upstream, w http.ResponseWriter, _ *http.Request) { sseHeader(w); sse(w, tt.events...) })
			cfg := tt.cfg
			cfg.APIKey = testKey
			a, _ := newTestAnthropic(t, u, cfg)
			var got []string
			res, err := a.Reply(t.Context(), tt.turn, collect(&got))
			if err != nil || res.InputRequired != tt.wantIR {
				t.Fatalf("Reply() = %+v, %v, want InputRequired %v and no error", res, err, tt.wantIR)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("emitted chunks (-want +got):\n%s", diff)
			}
			_, header, body := u.request()
			if tt.wantBody != nil {
				want, err := tt.wantBody.Anthropic("claude-sonnet-4-5", a.maxTokens, true)
				if err != nil {
					t.Fatal(err)
				}
				if string(body) != string(want) {
					t.Errorf("body = %s\nwant %s", body, want)
				}
			}
			if tt.cfg.Version != "" && header.Get("anthropic-version") != tt.cfg.Version {
				t.Errorf("anthropic-version = %q, want %q", header.Get("anthropic-version"), tt.cfg.Version)
			}
		})
	}
}

func TestAnthropicFailures(t *testing.T) {
	t.Parallel()
	const upstreamText = "invalid x-api-key " + testKey
	errorBody := func(code int, typ, msg string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`, typ, msg)
		}
	}
	tests := []struct {
		name    string
		reply   func(w http.ResponseWriter)
		wantMsg string
		wantLog string
		cause   Cause // CauseOf the error
	}{
		{name: "401", reply: errorBody(401, "authentication_error", upstreamText), wantMsg: "HTTP 401 (authentication refused)", wantLog: "authentication_error"},
		{name: "429", reply: errorBody(429, "rate_limit_error", upstreamText+" rate"), wantMsg: "HTTP 429", wantLog: "rate_limit_error", cause: CauseRateLimited},
		{name: "500", reply: errorBody(500, "api_error", upstreamText+" internal"), wantMsg: "HTTP 500", wantLog: "api_error", cause: CauseUnavailable},
		{name: "529", reply: errorBody(529, "overloaded_error", upstreamText+" Overloaded"), wantMsg: "HTTP 529 (overloaded)", wantLog: "overloaded_error", cause: CauseUnavailable},
		{
			name:    "400 prompt too long",
			reply:   errorBody(400, "invalid_request_error", upstreamText+" prompt is too long: 210000 tokens > 200000 maximum"),
			wantMsg: "HTTP 400 (request refused)", wantLog: "invalid_request_error", cause: CauseTooLarge,
		},
		{
			name: "error event mid-stream",
			reply: func(w http.ResponseWriter) {
				sseHeader(w)
				sse(w, anMessageStart, anBlockStart, anDelta("partial"),
					"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\""+upstreamText+" Overloaded\"}}\n\n")
			},
			wantMsg: "reported an error", wantLog: "error_type=overloaded_error", cause: CauseUnavailable,
		},
		{
			name: "stream ends without message_stop",
			reply: func(w http.ResponseWriter) {
				sseHeader(w)
				sse(w, anMessageStart, anBlockStart, anDelta("partial"), anBlockStop)
			},
			wantMsg: "ended early", wantLog: "ended before message_stop",
		},
		{
			name: "malformed event",
			reply: func(w http.ResponseWriter) {
				sseHeader(w)
				sse(w, anMessageStart, "event: content_block_delta\ndata: {\"type\":"+testKey+"\n\n")
			},
			wantMsg: "malformed", wantLog: "undecodable event",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t, func(_ *upstream, w http.ResponseWriter, _ *http.Request) { tt.reply(w) })
			a, logs := newTestAnthropic(t, u, AnthropicConfig{APIKey: testKey})
			_, err := a.Reply(t.Context(), chatTurn, func(string) error { return nil })
			if !errors.Is(err, ErrBackend) {
				t.Fatalf("Reply() error = %v, want %v", err, ErrBackend)
			}
			if got := CauseOf(err); got != tt.cause {
				t.Errorf("CauseOf(%v) = %d, want %d", err, got, tt.cause)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantMsg) || strings.Contains(msg, testKey) || strings.Contains(msg, "invalid x-api-key") {
				t.Errorf("error text %q: want it to name %q and carry neither the key nor upstream text", msg, tt.wantMsg)
			}
			log := logs.String()
			if !strings.Contains(log, tt.wantLog) || strings.Contains(log, testKey) || !strings.Contains(log, "level=WARN") {
				t.Errorf("log %q: want a Warn naming %q, without the API key", log, tt.wantLog)
			}
		})
	}
}

func TestAnthropicRefusesUnpairedToolUse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		msgs    []projection.Message
		wantMsg string // in the error's text; "" means the pairing message
	}{
		{name: "tool_use without tool_result", msgs: []projection.Message{
			{Role: projection.RoleUser, Content: "q"},
			{Role: projection.RoleAssistant, ToolCalls: []projection.ToolCall{{ID: "toolu_1", Name: "f", Arguments: "{}"}}},
			{Role: projection.RoleUser, Content: "next"},
		}},
		{name: "one of two tool_use answered", msgs: []projection.Message{
			{Role: projection.RoleAssistant, ToolCalls: []projection.ToolCall{{ID: "a", Name: "f"}, {ID: "b", Name: "f"}}},
			{Role: projection.RoleTool, ToolCallID: "a", Content: "r"},
		}},
		{name: "tool_result without tool_use", msgs: []projection.Message{
			{Role: projection.RoleUser, Content: "q"},
			{Role: projection.RoleTool, ToolCallID: "toolu_9", Content: "r"},
		}},
		{name: "tool call without an id", msgs: []projection.Message{
			{Role: projection.RoleAssistant, ToolCalls: []projection.ToolCall{{Name: "f", Arguments: "{}"}}},
			{Role: projection.RoleTool, Content: "r"},
		}, wantMsg: "cannot be sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t, func(_ *upstream, w http.ResponseWriter, _ *http.Request) { sseHeader(w); sse(w, anStream("x")...) })
			a, logs := newTestAnthropic(t, u, AnthropicConfig{APIKey: testKey})
			_, err := a.Reply(t.Context(), Turn{Request: projection.Request{Messages: tt.msgs}}, func(string) error { return nil })
			want := tt.wantMsg
			if want == "" {
				want = "do not pair up; nothing was sent"
			}
			if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Reply() error = %v, want %v naming %q", err, ErrBackend, want)
			}
			if n := u.hits.Load(); n != 0 {
				t.Errorf("upstream got %d requests, want 0", n)
			}
			if !strings.Contains(logs.String(), "cannot be sent") {
				t.Errorf("log %q: want the refusal", logs.String())
			}
		})
	}
}

func TestAnthropicCancelAndTimeout(t *testing.T) {
	t.Parallel()
	hangAfterDelta := func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, anMessageStart, anBlockStart, anDelta("first"), anPing)
		u.hang(r)
	}
	t.Run("cancel mid-stream", func(t *testing.T) {
		t.Parallel()
		u := newUpstream(t, hangAfterDelta)
		a, _ := newTestAnthropic(t, u, AnthropicConfig{APIKey: testKey, Timeout: time.Minute})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		_, err := a.Reply(ctx, chatTurn, func(string) error { cancel(); return nil })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Reply() error = %v, want %v", err, context.Canceled)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Reply() returned %v after the cancel, want promptly", d)
		}
	})
	t.Run("timeout bounds a stalled stream", func(t *testing.T) {
		t.Parallel()
		u := newUpstream(t, hangAfterDelta)
		const timeout = 300 * time.Millisecond
		a, _ := newTestAnthropic(t, u, AnthropicConfig{APIKey: testKey, Timeout: timeout})
		start := time.Now()
		var got []string
		_, err := a.Reply(t.Context(), chatTurn, collect(&got))
		d := time.Since(start)
		if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "within 300ms") {
			t.Fatalf("Reply() error = %v, want %v naming the timeout", err, ErrBackend)
		}
		if d < timeout || d > timeout+3*time.Second {
			t.Errorf("Reply() took %v, want about %v", d, timeout)
		}
		if diff := cmp.Diff([]string{"first"}, got); diff != "" {
			t.Errorf("emitted chunks before the timeout (-want +got):\n%s", diff)
		}
	})
}

func TestNewAnthropicConfig(t *testing.T) {
	t.Parallel()
	a, err := NewAnthropic(AnthropicConfig{Model: "m"}, nil)
	if err != nil {
		t.Fatalf("NewAnthropic() error = %v", err)
	}
	defer a.Close()
	if a.h.url != DefaultAnthropicURL+"/messages" || a.maxTokens != DefaultAnthropicMaxTokens ||
		a.header.Get("anthropic-version") != DefaultAnthropicVersion || a.h.timeout != DefaultTimeout || a.header.Get("x-api-key") != "" {
		t.Errorf("NewAnthropic() zero config: url %q max tokens %d version %q timeout %v, want the defaults",
			a.h.url, a.maxTokens, a.header.Get("anthropic-version"), a.h.timeout)
	}
	for _, cfg := range []AnthropicConfig{{}, {Model: "m", URL: "localhost:8080"}, {Model: "m", MaxTokens: -1}} {
		if _, err := NewAnthropic(cfg, nil); err == nil {
			t.Errorf("NewAnthropic(%+v) error = nil, want one", cfg)
		}
	}
}

func TestConfigLogValueRedactsKey(t *testing.T) {
	t.Parallel()
	logger, logs := testLogger()
	logger.Info("config", "openai", OpenAIConfig{Model: "m", APIKey: testKey}, "anthropic", AnthropicConfig{Model: "m", APIKey: testKey})
	if out := logs.String(); strings.Contains(out, testKey) || !strings.Contains(out, "openai.api_key_set=true") || !strings.Contains(out, "anthropic.api_key_set=true") {
		t.Errorf("log %q: want the configs without the key", out)
	}
}
