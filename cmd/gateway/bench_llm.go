package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/internal/loadgen"
)

// llmOptions are the flags of `gateway bench --profile llm` (issue #40 item 4).
type llmOptions struct {
	profile string // --profile: "" (the closed loop) or "llm"
	turns   string // --llm-turns: the steps, comma-separated
	wsShare float64
	ramp    time.Duration
	pid     int
	dataDir string
}

// llmTarget is the token delay a step must stay within to count.
const llmTarget = 50 * time.Millisecond

// llmFlags defines the llm profile's flags on fs.
func llmFlags(fs *flag.FlagSet, o *llmOptions) {
	fs.StringVar(&o.profile, "profile", "", "`P`: llm runs the agent-traffic profile instead of the closed loop: for each\n"+
		"--llm-turns step, that many streaming turns at once (fresh contextIds), each\n"+
		"answered by a model streaming tokens (internal/loadgen/mockllm behind the\n"+
		"server: 30 tokens/s for 10 s); reports the delay from the model writing a\n"+
		"token to the client reading it, and the largest step whose p99 stays within 50 ms")
	fs.StringVar(&o.turns, "llm-turns", "100,500,1000,2000,5000", "with --profile llm, the steps: turns in flight at once, `N,N,...`")
	fs.Float64Var(&o.wsShare, "llm-ws-share", 0.5, "with --profile llm, the `FRACTION` of turns over the gateway's /ws\n(the rest over SSE); 0 for servers without /ws")
	fs.DurationVar(&o.ramp, "llm-ramp", 2*time.Second, "with --profile llm, start each step's turns evenly over `D`")
	fs.IntVar(&o.pid, "server-pid", 0, "with --profile llm, the server's process `PID` on this machine: its\nresident memory per turn and CPU per token are reported")
	fs.StringVar(&o.dataDir, "server-data-dir", "", "with --profile llm, the server's data `DIR` on this machine: its growth\nper turn is reported")
}

// llmSteps parses --llm-turns.
func llmSteps(s string) ([]int, error) {
	var steps []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--llm-turns %q: want positive numbers separated by commas", s)
		}
		steps = append(steps, n)
	}
	return steps, nil
}

// runLLMProfile runs every step against url and prints a line per step and the largest
// step within the target.
func runLLMProfile(ctx context.Context, o llmOptions, url, token string, stdout, stderr io.Writer) error {
	steps, err := llmSteps(o.turns)
	if err != nil {
		return benchUsageError{err}
	}
	fmt.Fprintf(stderr, "bench: llm profile against %s: steps %v, %.0f%% over /ws\n", url, steps, o.wsShare*100)
	best := 0
	for _, n := range steps {
		rep, err := loadgen.RunLLM(ctx, loadgen.LLMConfig{URL: url, Turns: n, Ramp: o.ramp, WSShare: o.wsShare,
			Token: token, PID: o.pid, DataDir: o.dataDir})
		if errors.Is(err, loadgen.ErrInvalidConfig) {
			return benchUsageError{err}
		}
		if werr := rep.WriteText(stdout); werr != nil {
			return werr
		}
		if err != nil {
			return benchRunError(err)
		}
		if rep.Completed == n && rep.P99 <= llmTarget {
			best = n
		}
	}
	_, err = fmt.Fprintf(stdout, "largest step with every turn complete and token delay p99 <= %v: %d turns\n", llmTarget, best)
	return err
}
