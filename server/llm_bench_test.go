package server

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/loadgen"
)

// TestLLMProfile runs `gateway bench --profile llm`'s step against a real gateway whose
// openai agent streams from loadgen.MockModel: every turn, half over /ws and half over
// SSE, completes; every token is read once, with its delay; the server's memory, CPU and
// data directory are sampled (issue #40 item 4).
func TestLLMProfile(t *testing.T) {
	model := httptest.NewServer(loadgen.MockModel{Rate: 200, Tokens: 20})
	defer model.Close()
	cfg := testConfig(t)
	cfg.Agent, cfg.AgentURL, cfg.AgentModel = "openai", model.URL+"/v1", "bench"
	cfg.RateLimit, cfg.MaxStreamsPerPeer, cfg.MaxWSConnsPerPeer = "0", 0, 0
	dir := cfg.DataDir
	s := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := loadgen.RunLLM(ctx, loadgen.LLMConfig{URL: s.URL(), Turns: 6, Ramp: 100 * time.Millisecond, WSShare: 0.5,
		PID: os.Getpid(), DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Completed != 6 || len(rep.Errors) != 0 || rep.Tokens != 6*20 {
		t.Fatalf("report %+v: want 6 turns completed, no errors, %d tokens", rep, 6*20)
	}
	if rep.P50 <= 0 || rep.P99 < rep.P50 || rep.Max < rep.P99 || rep.PeakRSS <= 0 || rep.CPUPerToken <= 0 {
		t.Errorf("report %+v: delays or process figures missing", rep)
	}
}
