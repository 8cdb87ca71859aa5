package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// LLMConfig is one step of `gateway bench --profile llm` (issue #40 item 4): Turns
// streaming turns at once against URL, each a fresh contextId whose agent streams from
// MockModel, started evenly over Ramp; WSShare of them over the gateway's /ws, the rest
// over SSE (message/stream, v0.3: the dialect every server under comparison speaks).
type LLMConfig struct {
	URL     string        // the A2A JSON-RPC endpoint
	Turns   int           // turns in flight at once
	Ramp    time.Duration // the turns start evenly over this (2 s when 0)
	WSShare float64       // the fraction of turns over WebSocket (0..1)
	Timeout time.Duration // one turn's limit (60 s when 0)
	Token   string        // a peer token, sent as a bearer token when set
	PID     int           // the server's process, when on this machine: its memory and CPU are sampled
	DataDir string        // the server's data directory, when on this machine: its growth is measured
}

// LLMReport is what one step measured: the delay from the model writing a token to the
// client reading it (the token's own stamp, MockModel), over every token of every turn.
type LLMReport struct {
	Turns, Completed int
	Errors           map[string]int
	Tokens           int           // tokens read (each counted once: a repeated final text is not)
	P50, P99, Max    time.Duration // token delay
	Elapsed          time.Duration

	// With PID: the server's resident set before the step and at its peak (sampled every
	// 200 ms), the growth per turn in flight, and its CPU time per token read.
	IdleRSS, PeakRSS, RSSPerTurn int64
	CPUPerToken                  time.Duration
	// With DataDir: the data directory's growth per turn (bbolt grows its file in steps,
	// so this is coarse for few turns).
	LedgerBytesPerTurn int64
}

// RunLLM runs one step and waits for every turn to end.
func RunLLM(ctx context.Context, cfg LLMConfig) (LLMReport, error) {
	if cfg.URL == "" || cfg.Turns <= 0 || cfg.WSShare < 0 || cfg.WSShare > 1 {
		return LLMReport{}, fmt.Errorf("%w: llm: a URL, turns > 0 and a WebSocket share in 0..1", ErrInvalidConfig)
	}
	if cfg.Ramp <= 0 {
		cfg.Ramp = 2 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.Turns, MaxConnsPerHost: 0, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	run := llmRun{cfg: cfg, client: client, runID: time.Now().UnixNano(), errors: map[string]int{}}
	before := measureServer(cfg)
	sctx, stopSampling := context.WithCancel(ctx)
	peak := func() int64 { return 0 }
	if cfg.PID > 0 {
		peak = peakRSS(sctx, cfg.PID, 200*time.Millisecond)
	}
	start := time.Now()
	var wg sync.WaitGroup
	ws := int(float64(cfg.Turns) * cfg.WSShare)
	for i := range cfg.Turns {
		at := start.Add(cfg.Ramp * time.Duration(i) / time.Duration(cfg.Turns))
		if err := sleepUntil(ctx, at); err != nil {
			break
		}
		wg.Go(func() { run.turn(ctx, i, i%cfg.Turns < ws) })
	}
	wg.Wait()
	stopSampling()
	rep := run.report(time.Since(start))
	rep.addServer(cfg, before, measureServer(cfg), peak())
	return rep, ctx.Err()
}

// serverState is what RunLLM reads of the server before and after a step.
type serverState struct {
	proc procSample
	disk int64
}

func measureServer(cfg LLMConfig) serverState {
	var s serverState
	if cfg.PID > 0 {
		s.proc, _ = readProc(cfg.PID)
	}
	if cfg.DataDir != "" {
		s.disk, _ = dirBytes(cfg.DataDir)
	}
	return s
}

// addServer fills the server's figures in from the states around the step.
func (r *LLMReport) addServer(cfg LLMConfig, before, after serverState, peak int64) {
	if cfg.PID > 0 {
		r.IdleRSS, r.PeakRSS = before.proc.rss, max(peak, after.proc.rss)
		r.RSSPerTurn = (r.PeakRSS - r.IdleRSS) / int64(r.Turns)
		if r.Tokens > 0 {
			r.CPUPerToken = (after.proc.cpu - before.proc.cpu) / time.Duration(r.Tokens)
		}
	}
	if cfg.DataDir != "" && r.Completed > 0 {
		r.LedgerBytesPerTurn = (after.disk - before.disk) / int64(r.Completed)
	}
}

// sleepUntil waits until t or ctx's end.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// llmRun holds one step's shared state: the turns add their delays and outcomes.
type llmRun struct {
	cfg    LLMConfig
	client *http.Client
	runID  int64

	mu        sync.Mutex
	delays    []time.Duration
	completed int
	errors    map[string]int
}

// turn runs turn i to its end over SSE or WebSocket and records what it measured.
func (r *llmRun) turn(ctx context.Context, i int, overWS bool) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	t := &tokenTrack{}
	body := llmRequest(fmt.Sprintf("llm-%d-%d", r.runID, i), i)
	var err error
	if overWS {
		err = streamWS(ctx, r.cfg, body, t)
	} else {
		err = r.streamSSE(ctx, body, t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delays = append(r.delays, t.delays...)
	switch {
	case err == nil && t.done:
		r.completed++
	case err == nil:
		r.errors["ended before its final event"]++
	default:
		r.errors[llmErrorKey(err)]++
	}
}

// llmRequest is a v0.3 message/stream with a fresh contextId.
func llmRequest(contextID string, id int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"%s-m","contextId":"%s","parts":[{"kind":"text","text":"stream me a long answer"}]}}}`,
		id, contextID, contextID)
}

// streamSSE posts body and reads the SSE stream to its end.
func (r *llmRun) streamSSE(ctx context.Context, body []byte, t *tokenTrack) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if r.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("http %d", resp.StatusCode)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for !t.done {
		line, err := br.ReadSlice('\n')
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if ferr := t.frame(data); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
	return nil
}

// tokenTrack follows one turn's stream: the delay of each token the first time it is
// seen, and whether the final event came.
type tokenTrack struct {
	last   int
	delays []time.Duration
	done   bool
}

// frame reads one event (a JSON-RPC response: the SSE data or a WebSocket frame).
func (t *tokenTrack) frame(data []byte) error {
	now := time.Now().UnixMicro()
	tokenStamps(data, func(seq int, us int64) {
		if seq > t.last {
			t.last = seq
			t.delays = append(t.delays, time.Duration(now-us)*time.Microsecond)
		}
	})
	if bytes.Contains(data, []byte(`"error":{`)) {
		return fmt.Errorf("error event: %.200s", data)
	}
	t.done = t.done || bytes.Contains(data, []byte(`"final":true`))
	return nil
}

// llmErrorKey groups a turn's failure for the report.
func llmErrorKey(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case bytes.HasPrefix([]byte(err.Error()), []byte("http ")), bytes.HasPrefix([]byte(err.Error()), []byte("websocket")):
		return err.Error()
	case bytes.HasPrefix([]byte(err.Error()), []byte("error event")):
		return "error event"
	}
	return "transport"
}

// report sums the step up.
func (r *llmRun) report(elapsed time.Duration) LLMReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.Sort(r.delays)
	rep := LLMReport{Turns: r.cfg.Turns, Completed: r.completed, Errors: r.errors, Tokens: len(r.delays), Elapsed: elapsed}
	if n := len(r.delays); n > 0 {
		rep.P50, rep.P99, rep.Max = percentile(r.delays, 50), percentile(r.delays, 99), r.delays[n-1]
	}
	return rep
}

// WriteText prints the step as one line.
func (r LLMReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "turns %5d  completed %5d  tokens %8d  token delay ms p50 %7.2f p99 %8.2f max %8.2f  "+
		"rss/turn %6.1f KB  cpu/token %6.1f µs  ledger/turn %7.0f B  errors %v  (%.1fs)\n",
		r.Turns, r.Completed, r.Tokens, msf(r.P50), msf(r.P99), msf(r.Max),
		float64(r.RSSPerTurn)/1024, float64(r.CPUPerToken)/float64(time.Microsecond), float64(r.LedgerBytesPerTurn),
		r.Errors, r.Elapsed.Seconds())
	return err
}
