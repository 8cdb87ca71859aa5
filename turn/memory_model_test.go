package turn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/memory"
	"github.com/a2a-gateway/gateway/prompt"
)

// inventingModel answers a summary request with one honest fact per entry it is shown
// (the first five words of each entry with a content token, citing it) and four invented ones: a fact its evidence
// does not hold, evidence outside the range, evidence naming an entry it was not shown
// (a status: no such source entry), and no evidence at all.
func inventingModel(entries []agent.SummaryEntry) []agent.SummaryFact {
	var facts []agent.SummaryFact
	for _, e := range entries {
		if len(memory.Tokens(e.Text)) == 0 {
			continue // "ok": nothing to keep
		}
		words := strings.Fields(e.Text)
		facts = append(facts, agent.SummaryFact{Fact: strings.Join(words[:min(5, len(words))], " "), Evidence: []uint64{e.Seq}})
	}
	first := entries[0].Seq
	return append(facts,
		agent.SummaryFact{Fact: "the launch code is 99999", Evidence: []uint64{first}},
		agent.SummaryFact{Fact: strings.Join(strings.Fields(entries[0].Text)[:3], " "), Evidence: []uint64{1 << 40}},
		agent.SummaryFact{Fact: "ships build", Evidence: []uint64{first + 1}},
		agent.SummaryFact{Fact: "release train"},
	)
}

// chatServer is an httptest server speaking the OpenAI Chat Completions or the
// Anthropic Messages wire format: streamed replies ("ok", with usage reporting cached
// prompt tokens) and summary requests (json_schema response_format / a forced tool),
// answered by inventingModel.
func chatServer(t *testing.T, anthropic bool, summaries *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Stream         bool              `json:"stream"`
			ResponseFormat *json.RawMessage  `json:"response_format"`
			ToolChoice     map[string]string `json:"tool_choice"`
			PromptCacheKey string            `json:"prompt_cache_key"`
			Messages       []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request body: %v", err)
		}
		if !req.Stream {
			summaries.Add(1)
			answerSummary(t, w, anthropic, body)
			return
		}
		if !anthropic && !strings.HasPrefix(req.PromptCacheKey, "a2a-") {
			t.Errorf("prompt_cache_key = %q, want a stable per-conversation key", req.PromptCacheKey)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if anthropic {
			for _, ev := range []string{
				`{"type":"message_start","message":{"usage":{"input_tokens":20,"cache_read_input_tokens":80,"output_tokens":1}}}`,
				`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`,
				`{"type":"message_stop"}`,
			} {
				var typ struct{ Type string }
				_ = json.Unmarshal([]byte(ev), &typ)
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, ev)
			}
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"}}]}\n\n",
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":80}}}\n\n",
			"data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// answerSummary checks a summary request's response contract and answers it.
func answerSummary(t *testing.T, w http.ResponseWriter, anthropic bool, body []byte) {
	var req struct {
		System         json.RawMessage `json:"system"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		ToolChoice struct{ Type, Name string } `json:"tool_choice"`
		Messages   []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Errorf("summary request: %v", err)
	}
	var entries []agent.SummaryEntry
	if err := json.Unmarshal([]byte(req.Messages[len(req.Messages)-1].Content), &entries); err != nil || len(entries) == 0 {
		t.Errorf("summary input: %v (%d entries)", err, len(entries))
		return
	}
	out, _ := json.Marshal(map[string]any{"facts": inventingModel(entries)})
	w.Header().Set("Content-Type", "application/json")
	if anthropic {
		if len(req.Tools) != 1 || req.ToolChoice.Type != "tool" || req.ToolChoice.Name != req.Tools[0].Name || string(req.Tools[0].InputSchema) != agent.SummarySchema {
			t.Errorf("anthropic summary request: tools %+v, tool_choice %+v", req.Tools, req.ToolChoice)
		}
		fmt.Fprintf(w, `{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":%q,"input":%s}],"stop_reason":"tool_use","usage":{"input_tokens":50,"output_tokens":50}}`, req.ToolChoice.Name, out)
		return
	}
	if req.ResponseFormat.Type != "json_schema" || !req.ResponseFormat.JSONSchema.Strict || string(req.ResponseFormat.JSONSchema.Schema) != agent.SummarySchema {
		t.Errorf("openai summary request: response_format %+v", req.ResponseFormat)
	}
	content, _ := json.Marshal(string(out))
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":50}}`, content)
}

// TestMemoryByModel: a 300-turn conversation with a chat backend (OpenAI and Anthropic,
// real wire formats over httptest): the model's summaries are checked, its invented facts
// refused and audited (AUDIT_ONLY, with the reasons), the snapshots hold only facts whose
// evidence exists and holds them, replay equals live, every request fits its budget, and
// the provider's cached tokens are recorded in the STATUS metadata.
func TestMemoryByModel(t *testing.T) {
	t.Parallel()
	for _, anthropic := range []bool{false, true} {
		name := map[bool]string{false: "openai", true: "anthropic"}[anthropic]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var summaries atomic.Int32
			srv := chatServer(t, anthropic, &summaries)
			var ag agent.Agent
			var err error
			if anthropic {
				ag, err = agent.NewAnthropic(agent.AnthropicConfig{URL: srv.URL + "/v1", Model: "claude-test", MaxTokens: 64}, slog.New(slog.DiscardHandler))
			} else {
				ag, err = agent.NewOpenAI(agent.OpenAIConfig{URL: srv.URL + "/v1", Model: "gpt-test"}, slog.New(slog.DiscardHandler))
			}
			if err != nil {
				t.Fatal(err)
			}
			r, st := newRunner(t, ag)
			r.cfg.Policy = memoryPolicy()
			live := &recordingAgent{}
			r.agent = recorded{ag, live}
			turns := 300
			if testing.Short() {
				turns = 60
			}
			checkModelConversation(t, r, st, &summaries, turns)
		})
	}
}

// recorded is a chat backend whose turns are recorded (it keeps the backend's Summariser).
type recorded struct {
	agent.Agent
	rec *recordingAgent
}

func (a recorded) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	a.rec.mu.Lock()
	a.rec.turns = append(a.rec.turns, t)
	a.rec.mu.Unlock()
	return a.Agent.Reply(ctx, t, emit)
}

func (a recorded) Summarise(ctx context.Context, entries []agent.SummaryEntry, maxFacts int) ([]agent.SummaryFact, error) {
	return a.Agent.(agent.Summariser).Summarise(ctx, entries, maxFacts)
}

func (a recorded) SummariserName() string { return a.Agent.(agent.Summariser).SummariserName() }

func checkModelConversation(t *testing.T, r *Runner, st *ledger.Store, summaries *atomic.Int32, turns int) {
	t.Helper()
	for i := 1; i <= turns; i++ {
		if _, err := send(localCtx(t), r, "model", "", longText(i)); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	all, err := st.Range(t.Context(), "local", "model", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	look := memory.Lookups(all)
	snapshots, audits, cached := 0, 0, 0
	for i := range all {
		e := &all[i]
		switch e.Kind {
		case ledger.KindMemorySnapshot:
			snapshots++
			snap, _ := ledger.MemoryRecord(e)
			if !strings.HasPrefix(snap.Summariser, "model:openai:gpt-test") && !strings.HasPrefix(snap.Summariser, "model:anthropic:claude-test") || len(snap.Facts) == 0 {
				t.Errorf("seq %d: snapshot by %q with %d facts, want the model's", e.Seq, snap.Summariser, len(snap.Facts))
			}
			if rej := memory.Verify(snap, look); len(rej) != 0 {
				t.Errorf("seq %d: stored facts that fail the check: %v", e.Seq, rej)
			}
			for _, f := range snap.Facts {
				if strings.Contains(f.Text, "99999") || f.Text == "release train" {
					t.Errorf("seq %d: invented fact %q kept", e.Seq, f.Text)
				}
			}
		case ledger.KindAudit:
			audits += checkRejectAudit(t, e)
		case ledger.KindStatus:
			if strings.Contains(string(e.Metadata), `"cachedTokens":80`) {
				cached++
			}
		}
	}
	if snapshots == 0 || int(summaries.Load()) != snapshots || audits != snapshots {
		t.Fatalf("%d snapshots, %d summary requests, %d audits of refused facts; want one of each per refresh", snapshots, summaries.Load(), audits)
	}
	if cached != turns {
		t.Errorf("cached tokens recorded at %d of %d turns", cached, turns)
	}
	rec := r.agent.(recorded).rec
	userSeq := map[string]uint64{}
	for i := range all {
		if all[i].Kind == ledger.KindUserMessage {
			userSeq[all[i].TaskID] = all[i].Seq
		}
	}
	for i := range turns {
		u := rec.turns[i]
		rt, err := prompt.Replay(t.Context(), st, r.cfg.Policy, "local", "model", userSeq[u.TaskID])
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(u.Request, rt.Request); diff != "" {
			t.Fatalf("turn %d: replay differs from live (-live +replay):\n%s", i+1, diff)
		}
		if rt.Stats.HistoryTokens > 2000 {
			t.Errorf("turn %d: history %d tokens over budget", i+1, rt.Stats.HistoryTokens)
		}
	}
	t.Logf("%d turns, %d snapshots by the model, each with its refusals audited", turns, snapshots)
}

// checkRejectAudit checks a MEMORY_FACT_REJECTED audit: AUDIT_ONLY, naming the four
// invented facts with their reasons. It returns 1 for such an audit, 0 for another.
func checkRejectAudit(t *testing.T, e *ledger.Entry) int {
	t.Helper()
	var m struct {
		Audit    string             `json:"audit"`
		Rejected []memory.Rejection `json:"rejected"`
	}
	if json.Unmarshal(e.Metadata, &m) != nil || m.Audit != "MEMORY_FACT_REJECTED" {
		if strings.Contains(string(e.Metadata), "MEMORY_") {
			t.Errorf("seq %d: unexpected memory audit %s", e.Seq, e.Metadata)
		}
		return 0
	}
	if e.Visibility != ledger.VisibilityAudit {
		t.Errorf("seq %d: audit is %s", e.Seq, e.Visibility)
	}
	var reasons []string
	for _, r := range m.Rejected {
		reasons = append(reasons, strings.SplitN(r.Reason, ":", 2)[0])
	}
	want := []string{memory.ReasonUnsupported, memory.ReasonOutside, memory.ReasonNoEntry, memory.ReasonNoEvidence}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("seq %d: refusal reasons (-want +got):\n%s", e.Seq, diff)
	}
	return 1
}

// TestMemoryModelFails: when the model's summary request fails (an HTTP 400), the turn
// does not fail: the extractive summary stands in, and an AUDIT_ONLY entry says so (#38).
func TestMemoryModelFails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"stream":true`) {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n", "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	ag, err := agent.NewOpenAI(agent.OpenAIConfig{URL: srv.URL + "/v1", Model: "gpt-test"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r, st := newRunner(t, ag)
	r.cfg.Policy = memoryPolicy()
	for i := 1; i <= 60; i++ {
		res, err := send(localCtx(t), r, "fails", "", longText(i))
		if err != nil || res.Task == nil || res.Task.Status.State != "completed" {
			t.Fatalf("turn %d: %+v, %v; want completed", i, res.Task, err)
		}
	}
	all, err := st.Range(t.Context(), "local", "fails", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	snaps, fallbacks := 0, 0
	for i := range all {
		e := &all[i]
		switch {
		case e.Kind == ledger.KindMemorySnapshot:
			snaps++
			if m, _ := ledger.MemoryRecord(e); m.Summariser != memory.Extractive {
				t.Errorf("seq %d: snapshot by %q, want the extractive fallback", e.Seq, m.Summariser)
			}
		case e.Kind == ledger.KindAudit && strings.Contains(string(e.Metadata), `"MEMORY_SUMMARY_FAILED"`):
			fallbacks++
			if e.Visibility != ledger.VisibilityAudit || !strings.Contains(string(e.Metadata), "extractive") {
				t.Errorf("seq %d: audit %s %s", e.Seq, e.Visibility, e.Metadata)
			}
		}
	}
	if snaps == 0 || fallbacks != snaps {
		t.Fatalf("%d snapshots, %d fallback audits; want one audit per snapshot", snaps, fallbacks)
	}
}
