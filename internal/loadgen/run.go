package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/a2a-gateway/gateway/internal/netx"
)

const (
	// maxBody caps how much of one non-streaming answer is read.
	maxBody = 64 << 20
	// maxDrain caps how much is read and thrown away to keep a connection
	// reusable after an error status or a stream's terminal event.
	maxDrain = 1 << 20
	// drainGrace is how long a worker waits for a server to close a stream
	// after its terminal event before it drops the connection.
	drainGrace = 25 * time.Millisecond
	// finishGrace is how long requests in flight at the end of the window
	// may run on (uncounted) before they are cancelled, so that a normal
	// run ends without a burst of client disconnects.
	finishGrace = time.Second
)

// Run drives cfg.URL with cfg.Concurrency workers for cfg.Warmup plus
// cfg.Duration and reports what completed inside the measurement window.
//
// It returns an error wrapping [ErrInvalidConfig] if cfg does not validate.
// If ctx ends before the window closes, Run returns the figures measured so
// far together with the context's cause. Failed requests are not errors of
// Run: they are counted in the [Report]. Every goroutine Run starts has
// ended when it returns.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg = cfg.withDefaults()
	if cfg.RunID == "" {
		cfg.RunID = fmt.Sprintf("%08x", rand.Uint32())
	}
	tr := newTransport(cfg)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	tmpl := newRequestTemplate(cfg)
	runRand := rand.Uint64()

	start := time.Now()
	window := measureWindow{start: start.Add(cfg.Warmup), end: start.Add(cfg.Warmup + cfg.Duration)}
	runCtx, cancel := context.WithDeadline(ctx, window.end.Add(min(cfg.Timeout, finishGrace)))
	defer cancel()

	workers := make([]*worker, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		w := newWorker(cfg, client, &tmpl, runRand, i)
		workers[i] = w
		wg.Go(func() { w.loop(runCtx, window) }) // exits after window.end, or when runCtx ends
	}
	wg.Wait()

	elapsed := cfg.Duration
	err := context.Cause(ctx)
	if err != nil {
		elapsed = max(0, min(cfg.Duration, time.Since(window.start)))
	}
	results := make([]workerResult, len(workers))
	for i, w := range workers {
		results[i] = w.res
	}
	return summarize(results, elapsed), err
}

// measureWindow is the span of completion times that count.
type measureWindow struct{ start, end time.Time }

func (m measureWindow) contains(t time.Time) bool {
	return !t.Before(m.start) && !t.After(m.end)
}

// newTransport returns a keep-alive HTTP/1.1 transport with one connection
// per worker, which never proxies loopback targets.
func newTransport(cfg Config) *http.Transport {
	d := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               netx.ProxyUnlessLocal(http.ProxyFromEnvironment),
		DialContext:         d.DialContext,
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		// One connection per worker: without the cap a worker whose last
		// connection is still on its way back to the pool dials another.
		MaxConnsPerHost:     cfg.Concurrency,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: cfg.Timeout,
		DisableCompression:  true,
	}
}

// workerResult is what one worker measured inside the window.
type workerResult struct {
	ok     []time.Duration // latency of successful requests
	ttfb   []time.Duration // time to first event of successful streams
	failed []time.Duration // latency of failed requests
	errs   map[string]int  // failed requests by error key
}

// outcome is the result of one request.
type outcome struct {
	errKey  string        // empty on success
	latency time.Duration // until the full answer or the terminal event
	ttfb    time.Duration // until the first SSE event; zero if none
}

// worker issues one request at a time. Its fields are owned by the
// goroutine running loop.
type worker struct {
	cfg     Config
	client  *http.Client
	tmpl    *requestTemplate
	runRand uint64
	index   int
	ctxIDs  [][]byte // JSON-quoted contextIds this worker cycles through
	// freshBuf holds the JSON-quoted fresh contextId of the request being built
	// (FreshContexts); the body copies it.
	freshBuf []byte

	bodyCap int // capacity for the next request body: the largest so far
	respBuf bytes.Buffer
	br      *bufio.Reader
	line    []byte // scratch for SSE lines longer than br's buffer
	data    []byte // data of the SSE event being assembled
	res     workerResult
}

func newWorker(cfg Config, client *http.Client, tmpl *requestTemplate, runRand uint64, index int) *worker {
	w := &worker{
		cfg:     cfg,
		client:  client,
		tmpl:    tmpl,
		runRand: runRand,
		index:   index,
		res:     workerResult{errs: map[string]int{}},
	}
	for _, i := range contextIndexes(cfg.Contexts, cfg.Concurrency, index) {
		q, _ := json.Marshal(contextID(cfg.RunID, i)) // a string always marshals
		w.ctxIDs = append(w.ctxIDs, q)
	}
	if cfg.Stream {
		w.br = bufio.NewReaderSize(nil, 16<<10)
	}
	return w
}

// loop sends requests back to back until window ends or ctx ends,
// recording those that complete inside window.
func (w *worker) loop(ctx context.Context, window measureWindow) {
	for seq := 0; ctx.Err() == nil && time.Now().Before(window.end); seq++ {
		id := uint64(seq)*uint64(w.cfg.Concurrency) + uint64(w.index) + 1
		start := time.Now()
		o := w.do(ctx, id, w.contextFor(seq, id), start)
		if o.errKey != "" && ctx.Err() != nil {
			return // most likely cut short by a cancel or the finish deadline
		}
		if !window.contains(start.Add(o.latency)) {
			continue
		}
		if o.errKey != "" {
			w.res.errs[o.errKey]++
			w.res.failed = append(w.res.failed, o.latency)
			continue
		}
		w.res.ok = append(w.res.ok, o.latency)
		if w.cfg.Stream && o.ttfb > 0 {
			w.res.ttfb = append(w.res.ttfb, o.ttfb)
		}
	}
}

// contextFor returns the JSON-quoted contextId of the worker's seq-th request, whose
// JSON-RPC id is id: a fresh one per request with FreshContexts, else the next of the
// worker's own.
func (w *worker) contextFor(seq int, id uint64) []byte {
	if !w.cfg.FreshContexts {
		return w.ctxIDs[seq%len(w.ctxIDs)]
	}
	b := append(w.freshBuf[:0], `"bench-`...)
	b = append(b, w.cfg.RunID...)
	b = append(b, "-n"...)
	b = strconv.AppendUint(b, id, 10)
	w.freshBuf = append(b, '"')
	return w.freshBuf
}

// do sends one request and reads its answer; start is when the clock began.
func (w *worker) do(ctx context.Context, id uint64, ctxID []byte, start time.Time) outcome {
	reqCtx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	if w.cfg.Send != nil {
		// ctxID is JSON-quoted; the messageId is the JSON-RPC body's.
		msgID := string(appendUUID(nil, w.runRand, id))
		key := w.cfg.Send(reqCtx, string(ctxID[1:len(ctxID)-1]), msgID, w.cfg.Message)
		return outcome{errKey: key, latency: time.Since(start)}
	}
	// The transport may still read a body after Do returns, so each request
	// gets a fresh one rather than a reused buffer.
	body := w.tmpl.appendBody(make([]byte, 0, w.bodyCap), id, w.runRand, ctxID)
	w.bodyCap = max(w.bodyCap, len(body))
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, w.tmpl.url, bytes.NewReader(body))
	if err != nil {
		return outcome{errKey: ErrKeyTransport, latency: time.Since(start)}
	}
	req.Header.Set("Content-Type", "application/json")
	if w.cfg.Stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if w.cfg.Dialect == DialectV10 {
		req.Header.Set("A2A-Version", "1.0")
	}
	if w.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+w.cfg.Token)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return outcome{errKey: failureKey(err), latency: time.Since(start)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		o := outcome{errKey: "http " + strconv.Itoa(resp.StatusCode), latency: time.Since(start)}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
		return o
	}
	if w.cfg.Stream && isEventStream(resp.Header.Get("Content-Type")) {
		o := w.readStream(resp.Body, start)
		if o.errKey == "" || isRPCCode(o.errKey) {
			// Give the server a moment to end the stream so the
			// connection can be reused; otherwise drop it.
			t := time.AfterFunc(drainGrace, cancel)
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
			t.Stop()
		}
		return o
	}
	w.respBuf.Reset()
	if _, err := w.respBuf.ReadFrom(io.LimitReader(resp.Body, maxBody)); err != nil {
		return outcome{errKey: failureKey(err), latency: time.Since(start)}
	}
	latency := time.Since(start)
	if w.cfg.HTTPJSON {
		return outcome{errKey: sendResponseKey(w.respBuf.Bytes()), latency: latency}
	}
	return outcome{errKey: envelopeKey(w.respBuf.Bytes()), latency: latency}
}

// failureKey classifies an error from the transport or a body read.
func failureKey(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrKeyTimeout
	}
	return ErrKeyTransport
}

// isRPCCode reports whether an error key is a JSON-RPC code rather than an
// HTTP status or an ErrKey constant.
func isRPCCode(key string) bool {
	_, err := strconv.Atoi(key)
	return err == nil
}

func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// rpcError is the part of a JSON-RPC error object the report needs.
type rpcError struct {
	Code int `json:"code"`
}

// envelope is a JSON-RPC response whose result is kept raw.
type envelope struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// sendResponseKey returns "" if body is a v1.0 SendMessageResponse (a task or a
// message), else ErrKeyInvalid: an HTTP+JSON answer of status 200.
func sendResponseKey(body []byte) string {
	var r struct {
		Task    json.RawMessage `json:"task"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(body, &r) != nil || len(r.Task)+len(r.Message) == 0 {
		return ErrKeyInvalid
	}
	return ""
}

// envelopeKey returns "" if body is a successful JSON-RPC response, else the
// error key to count it under.
func envelopeKey(body []byte) string {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return ErrKeyInvalid
	}
	if env.Error != nil {
		return strconv.Itoa(env.Error.Code)
	}
	if len(env.Result) == 0 || string(env.Result) == "null" {
		return ErrKeyInvalid
	}
	return ""
}

// streamFrame is one SSE event's JSON-RPC response, decoded only as far as
// needed to find errors and the terminal event of either dialect.
type streamFrame struct {
	Result *struct {
		// v0.3: bare objects discriminated by kind; status-update carries final.
		Kind  string `json:"kind"`
		Final bool   `json:"final"`
		// v1.0: StreamResponse oneof members.
		Message      json.RawMessage `json:"message"`
		StatusUpdate *struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"statusUpdate"`
	} `json:"result"`
	Error *rpcError `json:"error"`
}

// terminalV10 are the v1.0 states after which a stream is done.
var terminalV10 = map[string]bool{
	"TASK_STATE_COMPLETED":      true,
	"TASK_STATE_FAILED":         true,
	"TASK_STATE_CANCELED":       true,
	"TASK_STATE_REJECTED":       true,
	"TASK_STATE_INPUT_REQUIRED": true,
}

// frameDone decodes one SSE event. It reports whether the stream is
// finished and, if the event is a failure, its error key.
func (w *worker) frameDone(data []byte) (done bool, errKey string) {
	var f streamFrame
	if err := json.Unmarshal(data, &f); err != nil {
		return true, ErrKeyInvalid
	}
	if f.Error != nil {
		return true, strconv.Itoa(f.Error.Code)
	}
	if f.Result == nil {
		return true, ErrKeyInvalid
	}
	r := f.Result
	if w.cfg.Dialect == DialectV10 {
		if len(r.Message) > 0 {
			return true, ""
		}
		return r.StatusUpdate != nil && terminalV10[r.StatusUpdate.Status.State], ""
	}
	return r.Kind == "message" || (r.Kind == "status-update" && r.Final), ""
}

// readStream reads SSE events from body until a terminal event, an error
// event or the end of the stream.
func (w *worker) readStream(body io.Reader, start time.Time) outcome {
	w.br.Reset(body)
	defer w.br.Reset(nil)
	var o outcome
	events := 0
	w.data = w.data[:0]
	inEvent := false
	dispatch := func() (done bool) {
		if !inEvent {
			return false
		}
		inEvent = false
		events++
		if events == 1 {
			o.ttfb = time.Since(start)
		}
		done, o.errKey = w.frameDone(w.data)
		w.data = w.data[:0]
		return done
	}
	for {
		line, err := w.readLine()
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		switch {
		case len(line) == 0 && err == nil:
			if dispatch() {
				o.latency = time.Since(start)
				return o
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if inEvent {
				w.data = append(w.data, '\n')
			}
			w.data = append(w.data, v...)
			inEvent = true
		}
		if err != nil {
			if err != io.EOF {
				return outcome{errKey: failureKey(err), latency: time.Since(start), ttfb: o.ttfb}
			}
			// The stream closing is the v1.0 end signal; accept it in
			// v0.3 too, and keep an unterminated last event.
			dispatch()
			o.latency = time.Since(start)
			if events == 0 {
				o.errKey = ErrKeyInvalid
			}
			return o
		}
	}
}

// readLine returns the next line including its newline, or the rest of the
// stream with io.EOF. The slice is valid until the next call.
func (w *worker) readLine() ([]byte, error) {
	line, err := w.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	w.line = append(w.line[:0], line...)
	for {
		line, err = w.br.ReadSlice('\n')
		w.line = append(w.line, line...)
		if err != bufio.ErrBufferFull {
			return w.line, err
		}
	}
}
