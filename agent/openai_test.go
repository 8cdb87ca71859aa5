package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/projection"
	"github.com/google/go-cmp/cmp"
)

const testKey = "sk-test-5ecret-KEY-0123456789"

// oaDelta is one streamed chat.completion.chunk event exactly as OpenAI writes it.
func oaDelta(content string) string {
	c, _ := json.Marshal(content)
	return `data: {"id":"chatcmpl-A1b2C3","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":` + string(c) + `},"logprobs":null,"finish_reason":null}]}` + "\n\n"
}

const (
	oaRole   = `data: {"id":"chatcmpl-A1b2C3","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	oaFinish = `data: {"id":"chatcmpl-A1b2C3","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n"
	oaDone   = "data: [DONE]\n\n"
)

func newTestOpenAI(t *testing.T, u *upstream, cfg OpenAIConfig) (*OpenAI, *logBuffer) {
	t.Helper()
	logger, logs := testLogger()
	cfg.URL = u.URL + "/v1/"
	if cfg.Model == "" {
		cfg.Model = "gpt-4o-mini"
	}
	o, err := NewOpenAI(cfg, logger)
	if err != nil {
		t.Fatalf("NewOpenAI() error = %v", err)
	}
	o.h.retryBase = time.Millisecond // retries of refusals that name no wait (retry_test.go)
	t.Cleanup(func() { o.Close() })
	return o, logs
}

var chatTurn = Turn{
	ContextID: "ctx-1", TaskID: "task-1", Peer: "local", Text: "世界 🎉?", Prompt: "prompt text",
	Request: projection.Request{System: "Be brief.", Messages: []projection.Message{
		{Role: projection.RoleUser, Content: "hi", Trust: projection.TrustPeerUntrusted},
		{Role: projection.RoleAssistant, Content: "hello", Trust: projection.TrustAgent},
		{Role: projection.RoleUser, Content: "世界 🎉?", Trust: projection.TrustPeerUntrusted},
	}},
}

func TestOpenAIStream(t *testing.T) {
	t.Parallel()
	deltas := []string{"Hello", ", ", "世界", " 🎉", "！ done"}
	firstSeen := make(chan struct{})
	u := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, oaRole, oaDelta(deltas[0]))
		// The rest is sent only once the first delta reached the caller: the reply streams.
		select {
		case <-firstSeen:
		case <-r.Context().Done():
			return
		}
		for _, d := range deltas[1:] {
			sse(w, oaDelta(d))
		}
		sse(w, oaFinish, oaDone)
	})
	o, _ := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey, MaxTokens: 256, Timeout: 10 * time.Second})
	var got []string
	res, err := o.Reply(t.Context(), chatTurn, func(c string) error {
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
	if s := strings.Join(got, ""); s != "Hello, 世界 🎉！ done" {
		t.Errorf("reply = %q", s)
	}

	path, header, body := u.request()
	if path != "/v1/chat/completions" {
		t.Errorf("path = %q, want /v1/chat/completions", path)
	}
	for k, want := range map[string]string{"Authorization": "Bearer " + testKey, "Content-Type": "application/json", "Accept": "text/event-stream"} {
		if got := header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	// The body is the projection's mapping, with stream_options (the usage, for the span),
	// max_tokens and the conversation's prompt_cache_key in front.
	mapped, err := chatTurn.Request.OpenAI("gpt-4o-mini", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"prompt_cache_key":"` + CacheKey(chatTurn.Peer, chatTurn.ContextID) + `","stream_options":{"include_usage":true},"max_tokens":256,` + string(mapped[1:]); string(body) != want {
		t.Errorf("body = %s\nwant %s", body, want)
	}
	var req struct {
		Model     string `json:"model"`
		Stream    bool   `json:"stream"`
		MaxTokens int    `json:"max_tokens"`
		Messages  []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body %s: %v", body, err)
	}
	if req.Model != "gpt-4o-mini" || !req.Stream || req.MaxTokens != 256 {
		t.Errorf("request model %q stream %v max_tokens %d, want gpt-4o-mini true 256", req.Model, req.Stream, req.MaxTokens)
	}
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	if diff := cmp.Diff([]string{"system", "user", "assistant", "user"}, roles); diff != "" {
		t.Errorf("request roles (-want +got):\n%s", diff)
	}
	if len(req.Messages) == 4 && (req.Messages[0].Content != "Be brief." || !strings.HasSuffix(req.Messages[3].Content, "世界 🎉?")) {
		t.Errorf("request messages = %+v, want the system prompt first and the current message last", req.Messages)
	}
}

func TestOpenAIReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		key    string
		turn   Turn
		reply  func(w http.ResponseWriter)
		want   []string
		wantIR bool
		check  func(t *testing.T, body []byte, header http.Header)
	}{
		{
			name:  "prompt as the only message when the turn has no request",
			key:   testKey,
			turn:  Turn{Prompt: "just the prompt", Text: "text"},
			reply: func(w http.ResponseWriter) { sseHeader(w); sse(w, oaRole, oaDelta("ok"), oaFinish, oaDone) },
			want:  []string{"ok"},
			check: func(t *testing.T, body []byte, header http.Header) {
				want, _ := projection.Request{Messages: []projection.Message{
					{Role: projection.RoleUser, Content: "just the prompt", Trust: projection.TrustPeerUntrusted},
				}}.OpenAI("gpt-4o-mini", true)
				want = append([]byte(`{"prompt_cache_key":"`+CacheKey("", "")+`","stream_options":{"include_usage":true},`), want[1:]...)
				if string(body) != string(want) || !strings.Contains(string(body), "just the prompt") {
					t.Errorf("body = %s, want %s", body, want)
				}
			},
		},
		{
			name: "input-required marker split across deltas",
			key:  testKey,
			turn: chatTurn,
			reply: func(w http.ResponseWriter) {
				sseHeader(w)
				sse(w, oaRole, oaDelta("[INPUT_"), oaDelta("REQUIRED] Which"), oaDelta(" color?"), oaFinish, oaDone)
			},
			want: []string{"Which", " color?"}, wantIR: true,
		},
		{
			name: "keep-alive comments and a missing [DONE] after a finish_reason",
			key:  testKey,
			turn: chatTurn,
			reply: func(w http.ResponseWriter) {
				sseHeader(w)
				sse(w, ": keep-alive\n\n", oaDelta("a"), "\r\n", oaDelta("b"), oaFinish)
			},
			want: []string{"a", "b"},
		},
		{
			name: "a server that ignores stream answers one JSON document",
			key:  testKey,
			turn: chatTurn,
			reply: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"whole 世界"},"finish_reason":"stop"}]}`)
			},
			want: []string{"whole 世界"},
		},
		{
			name:  "no auth header without a key",
			turn:  chatTurn,
			reply: func(w http.ResponseWriter) { sseHeader(w); sse(w, oaDone) },
			check: func(t *testing.T, body []byte, header http.Header) {
				if header.Get("Authorization") != "" {
					t.Errorf("Authorization = %q, want none", header.Get("Authorization"))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t, func(_ *upstream, w http.ResponseWriter, _ *http.Request) { tt.reply(w) })
			o, _ := newTestOpenAI(t, u, OpenAIConfig{APIKey: tt.key})
			var got []string
			res, err := o.Reply(t.Context(), tt.turn, collect(&got))
			if err != nil || res.InputRequired != tt.wantIR {
				t.Fatalf("Reply() = %+v, %v, want InputRequired %v and no error", res, err, tt.wantIR)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("emitted chunks (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				_, header, body := u.request()
				tt.check(t, body, header)
			}
		})
	}
}

func TestOpenAIFailures(t *testing.T) {
	t.Parallel()
	const upstreamText = "Incorrect API key provided: " + testKey
	errorBody := func(code int, msg, typ string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"param":null,"code":null}}`, msg, typ)
		}
	}
	tests := []struct {
		name    string
		reply   func(w http.ResponseWriter)
		wantMsg string // in the error's text
		wantLog string // in the log
		cause   Cause  // CauseOf the error
	}{
		{name: "401", reply: errorBody(401, upstreamText, "invalid_request_error"), wantMsg: "HTTP 401", wantLog: "status=401"},
		{name: "429", reply: errorBody(429, upstreamText+" Rate limit reached", "requests"), wantMsg: "HTTP 429 (rate limited)", wantLog: "Rate limit reached", cause: CauseRateLimited},
		{name: "500", reply: errorBody(500, upstreamText+" The server had an error", "server_error"), wantMsg: "HTTP 500", wantLog: "The server had an error", cause: CauseUnavailable},
		{name: "503", reply: errorBody(503, upstreamText+" overloaded", "server_error"), wantMsg: "HTTP 503 (overloaded)", wantLog: "status=503", cause: CauseUnavailable},
		{name: "413", reply: errorBody(413, upstreamText+" too large", "invalid_request_error"), wantMsg: "HTTP 413 (request refused)", wantLog: "status=413", cause: CauseTooLarge},
		{
			name:    "400 over the context length",
			reply:   errorBody(400, upstreamText+" This model's maximum context length is 8192 tokens (context_length_exceeded)", "invalid_request_error"),
			wantMsg: "HTTP 400 (request refused)", wantLog: "status=400", cause: CauseTooLarge,
		},
		{name: "400", reply: errorBody(400, upstreamText+" Invalid value for 'tools'", "invalid_request_error"), wantMsg: "HTTP 400 (request refused)", wantLog: "status=400"},
		{
			name:    "stream ends without [DONE]",
			reply:   func(w http.ResponseWriter) { sseHeader(w); sse(w, oaRole, oaDelta("partial")) },
			wantMsg: "ended early", wantLog: "ended before [DONE]",
		},
		{
			name: "error object in the stream",
			reply: func(w http.ResponseWriter) {
				sseHeader(w)
				sse(w, oaDelta("partial"), `data: {"error":{"message":"`+upstreamText+` overloaded","type":"server_error"}}`+"\n\n")
			},
			wantMsg: "reported an error", wantLog: "overloaded", cause: CauseUnavailable,
		},
		{
			name:    "malformed chunk",
			reply:   func(w http.ResponseWriter) { sseHeader(w); sse(w, "data: {\"choices\":[{\"delta\":"+testKey+"\n\n") },
			wantMsg: "malformed", wantLog: "undecodable chunk",
		},
		{
			name: "redirect not followed",
			reply: func(w http.ResponseWriter) {
				w.Header().Set("Location", "/elsewhere")
				w.WriteHeader(http.StatusTemporaryRedirect)
			},
			wantMsg: "HTTP 307 (redirect not followed)", wantLog: "status=307",
		},
		{
			name: "200 web page",
			reply: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(w, "<html><body>Sign in to the proxy</body></html>")
			},
			wantMsg: "web page (Content-Type text/html)", wantLog: "Sign in to the proxy",
		},
		{
			name:    "200 JSON error object",
			reply:   errorBody(200, upstreamText, "invalid_request_error"),
			wantMsg: "reported an error", wantLog: "invalid_request_error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t, func(_ *upstream, w http.ResponseWriter, _ *http.Request) { tt.reply(w) })
			o, logs := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey})
			_, err := o.Reply(t.Context(), chatTurn, func(string) error { return nil })
			if !errors.Is(err, ErrBackend) {
				t.Fatalf("Reply() error = %v, want %v", err, ErrBackend)
			}
			if got := CauseOf(err); got != tt.cause {
				t.Errorf("CauseOf(%v) = %d, want %d", err, got, tt.cause)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantMsg) || strings.Contains(msg, testKey) || strings.Contains(msg, "Incorrect API key") {
				t.Errorf("error text %q: want it to name %q and carry neither the key nor upstream text", msg, tt.wantMsg)
			}
			log := logs.String()
			if !strings.Contains(log, tt.wantLog) || strings.Contains(log, testKey) || !strings.Contains(log, "level=WARN") {
				t.Errorf("log %q: want a Warn naming %q, without the API key", log, tt.wantLog)
			}
		})
	}
}

func TestOpenAIRefusesUnpairedToolCalls(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, func(_ *upstream, w http.ResponseWriter, _ *http.Request) { sseHeader(w); sse(w, oaDone) })
	o, _ := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey})
	turn := Turn{Request: projection.Request{Messages: []projection.Message{
		{Role: projection.RoleUser, Content: "q"},
		{Role: projection.RoleAssistant, ToolCalls: []projection.ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}}},
		{Role: projection.RoleUser, Content: "next"},
	}}}
	_, err := o.Reply(t.Context(), turn, func(string) error { return nil })
	if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "do not pair up; nothing was sent") || CauseOf(err) != CauseHistory {
		t.Fatalf("Reply() error = %v (cause %d), want %v naming the pairing, cause CauseHistory", err, CauseOf(err), ErrBackend)
	}
	if n := u.hits.Load(); n != 0 {
		t.Errorf("upstream got %d requests, want 0", n)
	}
}

func TestOpenAICancelMidStream(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, oaDelta("first"))
		u.hang(r)
	})
	o, _ := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey, Timeout: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := time.Now()
	_, err := o.Reply(ctx, chatTurn, func(string) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Reply() error = %v, want %v", err, context.Canceled)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Reply() returned %v after the cancel, want promptly", d)
	}
}

func TestOpenAIEmitErrorEndsReply(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, oaDelta("first"))
		u.hang(r)
	})
	o, _ := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey, Timeout: time.Minute})
	errEmit := errors.New("turn canceled")
	if _, err := o.Reply(t.Context(), chatTurn, func(string) error { return errEmit }); !errors.Is(err, errEmit) {
		t.Fatalf("Reply() error = %v, want %v", err, errEmit)
	}
}

func TestOpenAITimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler func(u *upstream, w http.ResponseWriter, r *http.Request)
	}{
		{name: "no response headers", handler: func(u *upstream, w http.ResponseWriter, r *http.Request) { u.hang(r) }},
		{name: "stream stalls", handler: func(u *upstream, w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			sse(w, oaDelta("first"))
			u.hang(r)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t, tt.handler)
			const timeout = 300 * time.Millisecond
			o, logs := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey, Timeout: timeout})
			start := time.Now()
			_, err := o.Reply(t.Context(), chatTurn, func(string) error { return nil })
			d := time.Since(start)
			if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "within 300ms") || CauseOf(err) != CauseTimeout {
				t.Fatalf("Reply() error = %v (cause %d), want %v naming the timeout, cause CauseTimeout", err, CauseOf(err), ErrBackend)
			}
			if d < timeout || d > timeout+3*time.Second {
				t.Errorf("Reply() took %v, want about %v", d, timeout)
			}
			if !strings.Contains(logs.String(), "timed out") {
				t.Errorf("log %q: want the timeout", logs.String())
			}
		})
	}
}

func TestNewOpenAIConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     OpenAIConfig
		wantErr bool
	}{
		{name: "defaults", cfg: OpenAIConfig{Model: "m"}},
		{name: "no model", cfg: OpenAIConfig{URL: "http://127.0.0.1:1/v1"}, wantErr: true},
		{name: "relative URL", cfg: OpenAIConfig{URL: "api/v1", Model: "m"}, wantErr: true},
		{name: "other scheme", cfg: OpenAIConfig{URL: "ftp://host/v1", Model: "m"}, wantErr: true},
		{name: "negative max tokens", cfg: OpenAIConfig{Model: "m", MaxTokens: -1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := NewOpenAI(tt.cfg, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewOpenAI(%+v) error = %v, want error %v", tt.cfg, err, tt.wantErr)
			}
			if err == nil {
				if o.h.url != DefaultOpenAIURL+"/chat/completions" || o.h.timeout != DefaultTimeout {
					t.Errorf("NewOpenAI(%+v) url %q timeout %v, want the defaults", tt.cfg, o.h.url, o.h.timeout)
				}
				o.Close()
			}
		})
	}
}

func TestWithJSONInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: `{"model":"m","messages":[]}`, want: `{"max_tokens":7,"model":"m","messages":[]}`},
		{in: ` { } `, want: `{"max_tokens":7}`},
		{in: `[1]`, wantErr: true},
		{in: ``, wantErr: true},
	}
	for _, tt := range tests {
		got, err := withJSONInt([]byte(tt.in), "max_tokens", 7)
		if (err != nil) != tt.wantErr || string(got) != tt.want {
			t.Errorf("withJSONInt(%q) = %q, %v, want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestOpenAIConcurrentReplies(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, func(_ *upstream, w http.ResponseWriter, _ *http.Request) {
		sseHeader(w)
		sse(w, oaRole, oaDelta("one "), oaDelta("two"), oaFinish, oaDone)
	})
	o, _ := newTestOpenAI(t, u, OpenAIConfig{APIKey: testKey})
	errs := make(chan error, 8) // one per reply
	for range cap(errs) {
		go func() { // ends when its reply does
			var b strings.Builder
			_, err := o.Reply(t.Context(), chatTurn, func(c string) error { b.WriteString(c); return nil })
			if err == nil && b.String() != "one two" {
				err = fmt.Errorf("reply %q, want %q", b.String(), "one two")
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestExcerptRedactsAcrossTheCut(t *testing.T) {
	t.Parallel()
	b := newHTTPBackend("openai", "http://127.0.0.1:1", nil, 0, testKey, nil, nil)
	defer b.close()
	for _, pad := range []int{0, maxLogExcerpt - 5, maxLogExcerpt - 1, maxLogExcerpt} {
		body := strings.Repeat("x", pad) + testKey + " tail"
		got := b.excerpt([]byte(body))
		if strings.Contains(got, testKey[:5]) || len(got) > maxLogExcerpt+len("…") {
			t.Errorf("excerpt(key at %d) = %q: want no part of the key and at most %d bytes", pad, got, maxLogExcerpt)
		}
	}
}
