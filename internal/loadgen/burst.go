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
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Defaults for zero-valued settings of [Burst].
const (
	// DefaultBurstSenders is the burst size when [BurstConfig.Senders] is
	// zero: the 1,000 concurrent sends of the G7 perf anchor.
	DefaultBurstSenders = 1000
	// DefaultBurstWaves is the number of waves when [BurstConfig.Waves] is
	// zero.
	DefaultBurstWaves = 1
)

const (
	// busyCode and busyReason identify a CONTEXT_BUSY refusal: JSON-RPC
	// -32004 with the ErrorInfo reason CONTEXT_BUSY.
	busyCode   = -32004
	busyReason = "CONTEXT_BUSY"
	// dialSettle is how long a wave waits after dialing new connections, so
	// that the server has accepted them before the burst rather than during it.
	dialSettle = 100 * time.Millisecond
	// burstReadBuffer is the read buffer of each burst connection; a busy
	// reply fits in it whole.
	burstReadBuffer = 4 << 10
	// probeWait bounds the read that checks whether a kept-alive connection
	// is still open. (A read whose deadline has already passed fails
	// without looking at the socket, so the probe needs a little time.)
	probeWait = 2 * time.Millisecond
)

// aLongTimeAgo is a deadline in the past: I/O with it fails at once.
var aLongTimeAgo = time.Unix(1, 0)

// ErrBurstCheck is wrapped by the error [BurstReport.Check] returns when a
// wave misses the busy-rejection criteria.
var ErrBurstCheck = errors.New("burst check failed")

// BurstConfig describes a [Burst]. The zero value of every field except URL
// is usable and means the default documented on the field.
type BurstConfig struct {
	// URL is the JSON-RPC endpoint. Required; the scheme must be http (the
	// burst speaks HTTP/1.1 on plain TCP connections of its own).
	URL string
	// Senders is the number of requests fired at once in each wave, each on
	// its own connection. Zero means [DefaultBurstSenders].
	Senders int
	// Waves is the number of bursts fired one after another, each after
	// every answer of the previous one arrived. Zero means
	// [DefaultBurstWaves].
	Waves int
	// Dialect selects the wire format (message/send or SendMessage). Empty
	// means [DialectV03].
	Dialect Dialect
	// Message is the text of every request. Empty means [DefaultMessage].
	Message string
	// Token, when set, is sent as "Authorization: Bearer <Token>".
	Token string
	// Timeout bounds each request from its write to the end of its answer.
	// Zero means [DefaultTimeout].
	Timeout time.Duration
	// RunID names the run's one contextId, "burst-<RunID>". Empty means a
	// random 8-hex-digit id, so separate runs never share a context.
	RunID string
	// Baseline also fires every wave at an in-process bare echo server
	// ([StartBaseline]), right after the target's wave of the same number,
	// to measure the client-side floor of a burst on this machine.
	Baseline bool

	// beforeWave, when set (by tests), is called before each wave of the target
	// with the wave's number (from 0).
	beforeWave func(wave int)
	// probeWait, when set (by tests), replaces probeWait: on a loaded machine the kernel
	// can deliver a close the server has made after a probe of 2 ms gave up.
	probeWait time.Duration
}

// Validate reports every problem with c, each wrapping [ErrInvalidConfig],
// joined with [errors.Join]. It returns nil for a config [Burst] accepts.
func (c BurstConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format+": %w", append(args, ErrInvalidConfig)...))
	}
	if err := (Config{URL: c.URL, Dialect: c.Dialect, Timeout: c.Timeout, RunID: c.RunID}).Validate(); err != nil {
		errs = append(errs, err)
	} else if u, _ := url.Parse(c.URL); u.Scheme != "http" {
		bad("URL %q: a burst speaks plain http only", c.URL)
	}
	if c.Senders < 0 {
		bad("senders %d is negative", c.Senders)
	}
	if c.Waves < 0 {
		bad("waves %d is negative", c.Waves)
	}
	if strings.ContainsAny(c.Token, "\r\n\x00") {
		bad("token has a line break or NUL")
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field replaced by its default.
func (c BurstConfig) withDefaults() BurstConfig {
	if c.Senders == 0 {
		c.Senders = DefaultBurstSenders
	}
	if c.Waves == 0 {
		c.Waves = DefaultBurstWaves
	}
	if c.Dialect == "" {
		c.Dialect = DialectV03
	}
	if c.Message == "" {
		c.Message = DefaultMessage
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// BurstCounts are a wave's requests by outcome; they add up to the number
// of senders.
type BurstCounts struct {
	// Admitted answers carry a JSON-RPC result.
	Admitted int
	// Busy answers are JSON-RPC error -32004 with the reason CONTEXT_BUSY.
	// In dialect 0.3 a -32004 without a reason counts as busy as well; in
	// 1.0 the reason is required.
	Busy int
	// RPCError answers carry any other JSON-RPC error (including -32004
	// with another reason).
	RPCError int
	// HTTP5xx answers have an HTTP status of 500 or more.
	HTTP5xx int
	// Other answers have another status than 200, or are no JSON-RPC
	// response.
	Other int
	// Transport counts requests that failed below HTTP: no connection,
	// a reset or closed one, a malformed HTTP answer.
	Transport int
	// Timeout counts requests without a complete answer within
	// [BurstConfig.Timeout].
	Timeout int
}

func (c *BurstCounts) add(o BurstCounts) {
	c.Admitted += o.Admitted
	c.Busy += o.Busy
	c.RPCError += o.RPCError
	c.HTTP5xx += o.HTTP5xx
	c.Other += o.Other
	c.Transport += o.Transport
	c.Timeout += o.Timeout
}

// failures is every request that was neither admitted, busy, a 5xx nor a
// timeout.
func (c BurstCounts) failures() int { return c.RPCError + c.Other + c.Transport }

// BurstLatency summarises latencies, from just before a request was written
// to the end of its answer. Percentiles are nearest-rank values of the full
// sorted histogram; all fields are zero when N is.
type BurstLatency struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

func latencyOf(sorted []time.Duration) BurstLatency {
	if len(sorted) == 0 {
		return BurstLatency{}
	}
	return BurstLatency{
		N:   len(sorted),
		P50: percentile(sorted, 50), P90: percentile(sorted, 90), P99: percentile(sorted, 99),
		Max: sorted[len(sorted)-1],
	}
}

// BurstWave is what one wave of one side measured, or the merge of several
// waves ([BurstReport.TargetTotal]).
type BurstWave struct {
	Counts BurstCounts
	// Codes counts the requests that were neither admitted nor busy by
	// the keys of [Report.ErrorsByCode]: "-32603", "http 503", "timeout",
	// "transport", "invalid response"; a -32004 with another reason than
	// CONTEXT_BUSY is "-32004 <reason>". It is never nil.
	Codes map[string]int
	// Busy covers the busy answers, Admitted the admitted ones, All every
	// request that was answered (every class but Transport and Timeout).
	Busy, Admitted, All BurstLatency
	// Spread is the time from the release of the senders to the last
	// request written: how long this machine took to put the burst on the
	// wire. Span runs to the last answer or failure. Merged waves hold the
	// largest of each.
	Spread, Span time.Duration
	// TransportError is the text of one transport failure, "" if none.
	TransportError string

	busy, admitted, all []time.Duration // sorted; kept to merge waves
}

// newBurstWave merges waves into one.
func newBurstWave(waves []BurstWave) BurstWave {
	m := BurstWave{Codes: map[string]int{}}
	for _, w := range waves {
		m.Counts.add(w.Counts)
		for k, n := range w.Codes {
			m.Codes[k] += n
		}
		m.busy = append(m.busy, w.busy...)
		m.admitted = append(m.admitted, w.admitted...)
		m.all = append(m.all, w.all...)
		m.Spread = max(m.Spread, w.Spread)
		m.Span = max(m.Span, w.Span)
		if m.TransportError == "" {
			m.TransportError = w.TransportError
		}
	}
	m.summarise()
	return m
}

// summarise sorts the latencies and fills the percentiles.
func (w *BurstWave) summarise() {
	slices.Sort(w.busy)
	slices.Sort(w.admitted)
	slices.Sort(w.all)
	w.Busy, w.Admitted, w.All = latencyOf(w.busy), latencyOf(w.admitted), latencyOf(w.all)
}

// BurstReport is the outcome of [Burst].
type BurstReport struct {
	// ContextID is the one contextId every request of the run carried.
	ContextID string
	// Senders is the number of requests per wave.
	Senders int
	// Target holds one entry per completed wave against the URL, Baseline
	// one per wave against the in-process echo (empty without
	// [BurstConfig.Baseline]); wave i of the baseline ran right after wave
	// i of the target.
	Target, Baseline []BurstWave
	// TargetTotal and BaselineTotal merge the waves of each side.
	TargetTotal, BaselineTotal BurstWave
	// BusyP50Ratio and BusyP99Ratio are the target's busy-reply percentiles
	// over the baseline's percentiles of all its (admitted) answers: how
	// much slower a refusal is than the bare echo's answer under the same
	// burst. Zero without a baseline or without busy replies.
	BusyP50Ratio, BusyP99Ratio float64
}

func (r *BurstReport) summarise() {
	r.TargetTotal = newBurstWave(r.Target)
	r.BaselineTotal = newBurstWave(r.Baseline)
	r.BusyP50Ratio = ratio(float64(r.TargetTotal.Busy.P50), float64(r.BaselineTotal.All.P50))
	r.BusyP99Ratio = ratio(float64(r.TargetTotal.Busy.P99), float64(r.BaselineTotal.All.P99))
}

// Check holds r to the busy-rejection criteria (perf anchor G7): every
// target wave has exactly one admitted request and Senders-1 busy replies,
// and no wave of either side has a timeout or an HTTP 5xx answer. It
// returns nil if they hold, else an error wrapping [ErrBurstCheck] that
// names each failing wave and why. A report without target waves fails.
func (r BurstReport) Check() error {
	var errs []error
	if len(r.Target) == 0 {
		errs = append(errs, errors.New("no target wave completed"))
	}
	check := func(side string, i int, w BurstWave, target bool) {
		c := w.Counts
		var why []string
		if target && (c.Admitted != 1 || c.Busy != r.Senders-1) {
			why = append(why, fmt.Sprintf("%d admitted and %d busy, want 1 and %d", c.Admitted, c.Busy, r.Senders-1))
			if c.Admitted > 1 {
				why = append(why, "more than one admitted: the admitted turn ended before the burst did, or the server runs several tasks per context")
			}
		}
		if c.Timeout > 0 {
			why = append(why, fmt.Sprintf("%d timeouts", c.Timeout))
		}
		if c.HTTP5xx > 0 {
			why = append(why, fmt.Sprintf("%d HTTP 5xx", c.HTTP5xx))
		}
		if len(why) == 0 {
			return
		}
		if codes := codeList(w.Codes); codes != "" {
			why = append(why, "not admitted or busy: "+codes)
		}
		if w.TransportError != "" {
			why = append(why, "transport error: "+w.TransportError)
		}
		errs = append(errs, fmt.Errorf("wave %d %s: %s", i+1, side, strings.Join(why, "; ")))
	}
	for i, w := range r.Target {
		check("target", i, w, true)
	}
	for i, w := range r.Baseline {
		check("baseline", i, w, false)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrBurstCheck, errors.Join(errs...))
}

// codeList formats codes as "key: n, ...", most frequent first.
func codeList(codes map[string]int) string {
	keys := Report{ErrorsByCode: codes}.errorCodes()
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%s: %d", k, codes[k])
	}
	return strings.Join(keys, ", ")
}

// Burst fires cfg.Waves bursts of cfg.Senders concurrent requests, all to
// one fresh contextId, at cfg.URL (and, with cfg.Baseline, alternately at
// an in-process bare echo server), and reports every wave: answers by
// class and their latencies.
//
// Before a wave each sender has its own open HTTP/1.1 connection (kept
// alive from the previous wave unless the server closed it; new ones are
// given 100 ms to be accepted) and its request's bytes built; the senders
// are then released at once. Each takes its clock just
// before writing its request and stops it when the whole answer is read.
// A wave ends when every request was answered or failed, at most
// cfg.Timeout after its write.
//
// It returns an error wrapping [ErrInvalidConfig] if cfg does not validate,
// or the baseline's listen error. If ctx ends, Burst stops the wave in
// flight and returns the waves completed before it with the context's
// cause. Failed requests are counted in the report, not errors of Burst;
// use [BurstReport.Check] to judge the run. Every goroutine Burst starts
// has ended and every connection it opened is closed when it returns.
func Burst(ctx context.Context, cfg BurstConfig) (BurstReport, error) {
	if err := cfg.Validate(); err != nil {
		return BurstReport{}, err
	}
	cfg = cfg.withDefaults()
	if cfg.RunID == "" {
		cfg.RunID = fmt.Sprintf("%08x", rand.Uint32())
	}
	rep := BurstReport{ContextID: "burst-" + cfg.RunID, Senders: cfg.Senders}
	target := newBurstSide(cfg, cfg.URL, rep.ContextID)
	defer target.close()
	var base *burstSide
	if cfg.Baseline {
		baseURL, stop, err := StartBaseline(ctx)
		if err != nil {
			return rep, err
		}
		defer stop()
		base = newBurstSide(cfg, baseURL, rep.ContextID)
		defer base.close() // before stop: the server then has no client left
	}
	err := rep.fire(ctx, cfg.Waves, target, base)
	rep.summarise()
	return rep, err
}

// fire runs waves waves on target, each followed by the same wave on base
// unless it is nil, and appends them to r. It returns an error only when ctx
// ends.
func (r *BurstReport) fire(ctx context.Context, waves int, target, base *burstSide) error {
	for i := range waves {
		if target.cfg.beforeWave != nil {
			target.cfg.beforeWave(i)
		}
		w, err := target.wave(ctx, i)
		if err != nil {
			return err
		}
		r.Target = append(r.Target, w)
		if base == nil {
			continue
		}
		if w, err = base.wave(ctx, i); err != nil {
			return err
		}
		r.Baseline = append(r.Baseline, w)
	}
	return nil
}

// burstSide is the connections and request bytes for one server. It is
// used by one goroutine at a time: Burst's, except during a wave, when
// each sender owns its burstConn.
type burstSide struct {
	cfg     BurstConfig
	addr    string // host:port to dial
	head    []byte // request line and headers up to the Content-Length value
	tmpl    requestTemplate
	runRand uint64
	ctxID   []byte // JSON-quoted
	conns   []*burstConn
}

// burstConn is one sender's connection and what its request produced.
type burstConn struct {
	c      net.Conn // nil when not connected
	br     *bufio.Reader
	body   bytes.Buffer
	req    []byte
	broken bool // the connection cannot carry another request

	res burstResult
}

// burstResult is the outcome of one request.
type burstResult struct {
	class    burstClass
	key      string    // for Codes; "" for admitted and busy
	t0, t1   time.Time // write started, answer complete (or failure)
	errText  string    // a transport failure's text
	canceled bool      // cut short by the caller's ctx
}

// burstClass is the outcome class of one request; see [BurstCounts].
type burstClass uint8

const (
	classAdmitted burstClass = iota
	classBusy
	classRPCError
	classHTTP5xx
	classOther
	classTransport
	classTimeout
)

func newBurstSide(cfg BurstConfig, rawURL, contextID string) *burstSide {
	u, _ := url.Parse(rawURL) // validated
	port := u.Port()
	if port == "" {
		port = "80"
	}
	s := &burstSide{
		cfg:     cfg,
		addr:    net.JoinHostPort(u.Hostname(), port),
		tmpl:    newRequestTemplate(Config{Dialect: cfg.Dialect, Message: cfg.Message}),
		runRand: rand.Uint64(),
		conns:   make([]*burstConn, cfg.Senders),
	}
	s.ctxID, _ = json.Marshal(contextID) // a string always marshals
	var h bytes.Buffer
	fmt.Fprintf(&h, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: gateway-bench\r\n", u.RequestURI(), u.Host)
	h.WriteString("Content-Type: application/json\r\nAccept: application/json\r\n")
	if cfg.Dialect == DialectV10 {
		h.WriteString("A2A-Version: 1.0\r\n")
	}
	if cfg.Token != "" {
		h.WriteString("Authorization: Bearer " + cfg.Token + "\r\n")
	}
	h.WriteString("Content-Length: ")
	s.head = h.Bytes()
	for i := range s.conns {
		s.conns[i] = &burstConn{}
	}
	return s
}

// close closes every connection.
func (s *burstSide) close() {
	for _, bc := range s.conns {
		bc.drop()
	}
}

// drop closes bc's connection, if any.
func (bc *burstConn) drop() {
	if bc.c != nil {
		_ = bc.c.Close()
		bc.c, bc.broken = nil, false
	}
}

// prepare gives every sender of wave a connection (a kept-alive one if it
// is still open) and its request's bytes. A failed dial is recorded as the
// sender's transport failure; prepare returns an error only when ctx ends.
func (s *burstSide) prepare(ctx context.Context, wave int) error {
	s.dropClosed()
	d := net.Dialer{Timeout: s.cfg.Timeout, KeepAlive: -1}
	dialed := false
	for i, bc := range s.conns {
		bc.res = burstResult{}
		if bc.c == nil {
			c, err := d.DialContext(ctx, "tcp", s.addr)
			if err != nil {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				now := time.Now()
				bc.res = burstResult{class: classTransport, key: ErrKeyTransport, t0: now, t1: now, errText: err.Error()}
				continue
			}
			bc.c = c
			if bc.br == nil {
				bc.br = bufio.NewReaderSize(c, burstReadBuffer)
			} else {
				bc.br.Reset(c)
			}
			dialed = true
		}
		id := uint64(wave)*uint64(s.cfg.Senders) + uint64(i) + 1
		var body [2048]byte
		b := s.tmpl.appendBody(body[:0], id, s.runRand, s.ctxID)
		bc.req = append(bc.req[:0], s.head...)
		bc.req = strconv.AppendInt(bc.req, int64(len(b)), 10)
		bc.req = append(bc.req, "\r\n\r\n"...)
		bc.req = append(bc.req, b...)
	}
	if dialed {
		t := time.NewTimer(dialSettle)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// dropClosed closes the kept-alive connections that the server has closed
// since the last wave (or that hold unexpected bytes). The connections are
// probed in parallel, so this takes about probeWait.
func (s *burstSide) dropClosed() {
	wait := probeWait
	if s.cfg.probeWait > 0 {
		wait = s.cfg.probeWait
	}
	var probes sync.WaitGroup
	for _, bc := range s.conns {
		if bc.c != nil && !bc.broken {
			probes.Go(func() { bc.broken = !bc.alive(wait) }) // exits after one read of at most wait
		}
	}
	probes.Wait()
	for _, bc := range s.conns {
		if bc.broken {
			bc.drop()
		}
	}
}

// alive reports whether a kept-alive connection is still open: a read of at
// most wait finds neither data nor the end of the stream.
func (bc *burstConn) alive(wait time.Duration) bool {
	if bc.br.Buffered() > 0 {
		return false
	}
	if bc.c.SetReadDeadline(time.Now().Add(wait)) != nil {
		return false
	}
	var b [1]byte
	n, err := bc.c.Read(b[:])
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	return bc.c.SetReadDeadline(time.Time{}) == nil
}

// wave fires one burst and waits for every answer or failure. It returns
// an error only when ctx ends.
func (s *burstSide) wave(ctx context.Context, wave int) (BurstWave, error) {
	if err := s.prepare(ctx, wave); err != nil {
		return BurstWave{}, err
	}
	// A canceled ctx unblocks every sender by expiring its connection.
	unblocked := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(unblocked)
		for _, bc := range s.conns {
			if bc.c != nil {
				_ = bc.c.SetDeadline(aLongTimeAgo)
			}
		}
	})
	release := make(chan struct{})
	var ready, senders sync.WaitGroup
	for _, bc := range s.conns {
		if bc.c == nil {
			continue // its dial failed
		}
		ready.Add(1)
		senders.Go(func() { // exits after its one request: answered, failed or timed out
			ready.Done()
			select {
			case <-release:
			case <-ctx.Done():
				bc.res.canceled = true
				return
			}
			bc.do(ctx, s.cfg)
		})
	}
	ready.Wait()
	released := time.Now()
	close(release)
	senders.Wait()
	if !stop() {
		<-unblocked
	}
	for _, bc := range s.conns {
		if bc.broken {
			bc.drop()
		}
	}
	if ctx.Err() != nil {
		return BurstWave{}, context.Cause(ctx)
	}
	return s.collect(released), nil
}

// collect summarises the senders' results of a wave released at released.
func (s *burstSide) collect(released time.Time) BurstWave {
	w := BurstWave{Codes: map[string]int{}}
	for _, bc := range s.conns {
		r := bc.res
		lat := r.t1.Sub(r.t0)
		if r.t0.After(released) {
			w.Spread = max(w.Spread, r.t0.Sub(released))
		}
		if r.t1.After(released) {
			w.Span = max(w.Span, r.t1.Sub(released))
		}
		switch r.class {
		case classAdmitted:
			w.Counts.Admitted++
			w.admitted = append(w.admitted, lat)
		case classBusy:
			w.Counts.Busy++
			w.busy = append(w.busy, lat)
		case classRPCError:
			w.Counts.RPCError++
		case classHTTP5xx:
			w.Counts.HTTP5xx++
		case classOther:
			w.Counts.Other++
		case classTransport:
			w.Counts.Transport++
			if w.TransportError == "" {
				w.TransportError = r.errText
			}
		case classTimeout:
			w.Counts.Timeout++
		}
		if r.key != "" {
			w.Codes[r.key]++
		}
		if r.class != classTransport && r.class != classTimeout {
			w.all = append(w.all, lat)
		}
	}
	w.summarise()
	return w
}

// do sends bc's request and reads its answer into bc.res.
func (bc *burstConn) do(ctx context.Context, cfg BurstConfig) {
	if err := bc.c.SetDeadline(time.Now().Add(cfg.Timeout)); err != nil {
		bc.fail(ctx, time.Now(), err)
		return
	}
	// Checked after setting the deadline: a cancel from now on expires it.
	if ctx.Err() != nil {
		bc.res.canceled = true
		return
	}
	t0 := time.Now()
	if _, err := bc.c.Write(bc.req); err != nil {
		bc.fail(ctx, t0, err)
		return
	}
	resp, err := http.ReadResponse(bc.br, nil)
	if err != nil {
		bc.fail(ctx, t0, err)
		return
	}
	bc.body.Reset()
	n, err := bc.body.ReadFrom(io.LimitReader(resp.Body, maxBody))
	t1 := time.Now()
	if err != nil {
		bc.fail(ctx, t0, err)
		return
	}
	if resp.Close || n == maxBody {
		bc.broken = true // the server closes it, or the rest of the body is unread
	}
	class, key := classifyBurst(resp.StatusCode, bc.body.Bytes(), cfg.Dialect)
	bc.res = burstResult{class: class, key: key, t0: t0, t1: t1}
}

// fail records a request that got no complete answer.
func (bc *burstConn) fail(ctx context.Context, t0 time.Time, err error) {
	bc.broken = true
	bc.res = burstResult{t0: t0, t1: time.Now()}
	switch {
	case ctx.Err() != nil:
		bc.res.canceled = true
	case errors.Is(err, os.ErrDeadlineExceeded):
		bc.res.class, bc.res.key = classTimeout, ErrKeyTimeout
	default:
		bc.res.class, bc.res.key, bc.res.errText = classTransport, ErrKeyTransport, err.Error()
	}
}

// burstEnvelope is a JSON-RPC response, decoded as far as classifying it
// needs.
type burstEnvelope struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	} `json:"error"`
}

// classifyBurst returns an answer's class and, unless it is admitted or
// busy, its key for [BurstWave.Codes].
func classifyBurst(status int, body []byte, d Dialect) (burstClass, string) {
	switch {
	case status >= 500:
		return classHTTP5xx, "http " + strconv.Itoa(status)
	case status != http.StatusOK:
		return classOther, "http " + strconv.Itoa(status)
	}
	var env burstEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		return classOther, ErrKeyInvalid
	}
	if env.Error != nil {
		code := strconv.Itoa(env.Error.Code)
		if env.Error.Code != busyCode {
			return classRPCError, code
		}
		reason := errorReason(env.Error.Data)
		if reason == busyReason || reason == "" && d == DialectV03 {
			return classBusy, ""
		}
		if reason != "" {
			code += " " + reason
		}
		return classRPCError, code
	}
	if len(env.Result) == 0 || string(env.Result) == "null" {
		return classOther, ErrKeyInvalid
	}
	return classAdmitted, ""
}

// errorReason returns the ErrorInfo reason of a JSON-RPC error's data: an
// object with "reason" (v0.3) or the first detail with one in an array of
// typed details (v1.0). It returns "" if there is none.
func errorReason(data json.RawMessage) string {
	type info struct {
		Reason string `json:"reason"`
	}
	var one info
	if json.Unmarshal(data, &one) == nil {
		return one.Reason
	}
	var details []info
	if json.Unmarshal(data, &details) == nil {
		for _, d := range details {
			if d.Reason != "" {
				return d.Reason
			}
		}
	}
	return ""
}

// WriteText writes r as a table with one row per wave and side and the
// totals of each side (counts, then latencies in milliseconds), followed by
// the busy/baseline ratios and the answers that were neither admitted nor
// busy. It returns the first write error.
func (r BurstReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "context      %s, %d requests at once per wave, %d waves\n\n", r.ContextID, r.Senders, len(r.Target))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "wave\tside\tadmitted\tbusy\tother\ttimeout\t5xx\tbusy p50 ms\tbusy p90 ms\tbusy p99 ms\tbusy max ms\tall p50 ms\tall p90 ms\tall p99 ms\tall max ms\tspread ms\t")
	lat := func(l BurstLatency) string {
		if l.N == 0 {
			return "-\t-\t-\t-\t"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max))
	}
	row := func(wave, side string, x BurstWave) {
		c := x.Counts
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s%s%s\t\n", wave, side, c.Admitted, c.Busy, c.failures(), c.Timeout, c.HTTP5xx,
			lat(x.Busy), lat(x.All), ms(x.Spread))
	}
	for i := range max(len(r.Target), len(r.Baseline)) {
		if i < len(r.Target) {
			row(strconv.Itoa(i+1), "target", r.Target[i])
		}
		if i < len(r.Baseline) {
			row(strconv.Itoa(i+1), "baseline", r.Baseline[i])
		}
	}
	row("all", "target", r.TargetTotal)
	if len(r.Baseline) > 0 {
		row("all", "baseline", r.BaselineTotal)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if a := r.TargetTotal.Admitted; a.N > 0 {
		fmt.Fprintf(&b, "\nadmitted     p50 %s  max %s ms (the one running turn per wave)\n", ms(a.P50), ms(a.Max))
	}
	if len(r.Baseline) > 0 {
		fmt.Fprintf(&b, "busy/baseline  p50 %.3f  p99 %.3f (target busy replies over the bare echo's answers to the same burst)\n",
			r.BusyP50Ratio, r.BusyP99Ratio)
	}
	for _, side := range []struct {
		name string
		w    BurstWave
	}{{"target", r.TargetTotal}, {"baseline", r.BaselineTotal}} {
		if codes := codeList(side.w.Codes); codes != "" {
			fmt.Fprintf(&b, "other        %s: %s\n", side.name, codes)
		}
		if side.w.TransportError != "" {
			fmt.Fprintf(&b, "transport    %s: %s\n", side.name, side.w.TransportError)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// burstLatencyJSON is the machine-readable form of a BurstLatency.
type burstLatencyJSON struct {
	N     int     `json:"n"`
	P50MS float64 `json:"p50_ms"`
	P90MS float64 `json:"p90_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}

// MarshalJSON encodes l with latencies as fractional milliseconds.
func (l BurstLatency) MarshalJSON() ([]byte, error) {
	return json.Marshal(burstLatencyJSON{N: l.N, P50MS: msf(l.P50), P90MS: msf(l.P90), P99MS: msf(l.P99), MaxMS: msf(l.Max)})
}

// burstWaveJSON is the machine-readable form of a BurstWave.
type burstWaveJSON struct {
	Admitted       int            `json:"admitted"`
	Busy           int            `json:"busy"`
	RPCError       int            `json:"rpc_error"`
	HTTP5xx        int            `json:"http_5xx"`
	Other          int            `json:"other"`
	Transport      int            `json:"transport"`
	Timeout        int            `json:"timeout"`
	Codes          map[string]int `json:"codes"`
	BusyLatency    BurstLatency   `json:"busy_latency"`
	AdmittedLat    BurstLatency   `json:"admitted_latency"`
	AllLatency     BurstLatency   `json:"all_latency"`
	SpreadMS       float64        `json:"spread_ms"`
	SpanMS         float64        `json:"span_ms"`
	TransportError string         `json:"transport_error,omitempty"`
}

// MarshalJSON encodes w with snake_case keys and times in milliseconds.
func (w BurstWave) MarshalJSON() ([]byte, error) {
	codes := w.Codes
	if codes == nil {
		codes = map[string]int{}
	}
	c := w.Counts
	return json.Marshal(burstWaveJSON{
		Admitted: c.Admitted, Busy: c.Busy, RPCError: c.RPCError, HTTP5xx: c.HTTP5xx, Other: c.Other,
		Transport: c.Transport, Timeout: c.Timeout, Codes: codes,
		BusyLatency: w.Busy, AdmittedLat: w.Admitted, AllLatency: w.All,
		SpreadMS: msf(w.Spread), SpanMS: msf(w.Span), TransportError: w.TransportError,
	})
}

// burstReportJSON is the machine-readable form of a BurstReport.
type burstReportJSON struct {
	ContextID     string             `json:"context_id"`
	Senders       int                `json:"senders"`
	Target        []BurstWave        `json:"target"`
	Baseline      []BurstWave        `json:"baseline"`
	TargetTotal   BurstWave          `json:"target_total"`
	BaselineTotal *BurstWave         `json:"baseline_total,omitempty"`
	Ratio         map[string]float64 `json:"ratio,omitempty"`
}

// MarshalJSON encodes r with snake_case keys; with a baseline, "ratio"
// holds "busy_p50" and "busy_p99" (see [BurstReport.BusyP99Ratio]).
func (r BurstReport) MarshalJSON() ([]byte, error) {
	out := burstReportJSON{
		ContextID: r.ContextID, Senders: r.Senders,
		Target: nonNilWaves(r.Target), Baseline: nonNilWaves(r.Baseline), TargetTotal: r.TargetTotal,
	}
	if len(r.Baseline) > 0 {
		out.BaselineTotal = &r.BaselineTotal
		out.Ratio = map[string]float64{"busy_p50": r.BusyP50Ratio, "busy_p99": r.BusyP99Ratio}
	}
	return json.Marshal(out)
}

func nonNilWaves(ws []BurstWave) []BurstWave {
	if ws == nil {
		return []BurstWave{}
	}
	return ws
}
