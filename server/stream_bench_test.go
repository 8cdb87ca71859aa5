package server

// Benchmarks of the live streams through the whole gateway (issue #6). Each reports its
// figures next to a baseline measured in the same run: this VM drifts ±30%, ratios and
// differences hold.
//
//	go test -run '^$' -bench 'BenchmarkWSIdleConnMemory|BenchmarkTimeToFirstEvent|BenchmarkFanout100' ./server/

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// benchToken is the bearer token of the benchmarks' one peer: the auth middleware runs
// on every request, as in production.
const benchToken = "bench-token-0001-abcdefghijklmnop"

// startBenchServer runs a gateway (durable ledger, in-process lease, peer auth) for a
// benchmark; it is closed at cleanup.
func startBenchServer(b *testing.B, opts ...Option) *Server {
	b.Helper()
	return startBenchServerWith(b, nil, opts...)
}

// startBenchServerWith is startBenchServer with edit applied to its Config (nil: none).
func startBenchServerWith(b *testing.B, edit func(*Config), opts ...Option) *Server {
	b.Helper()
	cfg := Config{
		Addr: "127.0.0.1:0", DataDir: b.TempDir(), Agent: "echo",
		LogLevel: slog.LevelWarn, LogFormat: "json", ShutdownTimeout: 10 * time.Second,
		BusyPolicy: "reject", LeaseTTL: 30 * time.Second,
		AgentInput: "text", AgentTimeout: 30 * time.Second, HistoryLimit: 20,
		Peers: []Peer{{Name: "bench", Accept: []string{benchToken}}},
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := Open(context.Background(), cfg, discardLogger(), opts...)
	if err != nil {
		b.Fatalf("OpenServer() error = %v", err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			b.Errorf("Close() error = %v", err)
		}
	})
	return s
}

// ---- idle connection memory ----

// idleTarget is a WebSocket server under measurement.
type idleTarget struct {
	addr  string       // host:port; the endpoint is /ws
	conns func() int   // upgraded connections being served
	stop  func() error // after every client has gone
}

// gatewayIdleTarget serves the gateway's real /ws: OpenServer, echo, the peer-auth
// middleware, the streaming Handler.
func gatewayIdleTarget(b *testing.B) idleTarget {
	cfg := Config{
		Addr: "127.0.0.1:0", DataDir: b.TempDir(), Agent: "echo",
		LogLevel: slog.LevelWarn, LogFormat: "json", ShutdownTimeout: 30 * time.Second,
		BusyPolicy: "reject", LeaseTTL: 30 * time.Second,
		AgentInput: "text", AgentTimeout: 30 * time.Second, HistoryLimit: 20,
		Peers: []Peer{{Name: "bench", Accept: []string{benchToken}}},
	}
	s, err := Open(context.Background(), cfg, discardLogger())
	if err != nil {
		b.Fatalf("OpenServer() error = %v", err)
	}
	return idleTarget{
		addr:  s.Addr(),
		conns: func() int { return s.ws.Stats().Conns },
		stop: func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return s.Close(ctx)
		},
	}
}

// bareIdleTarget is gorilla/websocket's echo example: the zero Upgrader, one goroutine
// per connection reading and echoing, on a plain net/http server.
func bareIdleTarget(b *testing.B) idleTarget {
	var up websocket.Upgrader
	var live atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		live.Add(1)
		defer live.Add(-1)
		for {
			mt, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, p); err != nil {
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }() // exits when stop closes the server
	return idleTarget{
		addr:  ln.Addr().String(),
		conns: func() int { return int(live.Load()) },
		stop: func() error {
			// Give the connections until the hang guard to end; Close ends the rest.
			testutil.Until(testutil.Deadline(b), func() bool { return live.Load() == 0 })
			err := srv.Close()
			<-served
			return err
		},
	}
}

// rawWSUpgrade opens a WebSocket with a plain TCP connection and a hand-written handshake
// carrying the bench peer's token, so that the client side costs the same few hundred
// bytes whatever the server.
func rawWSUpgrade(addr string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n", addr, benchToken)
	var buf [512]byte
	n := 0
	for err == nil && !bytes.Contains(buf[:n], []byte("\r\n\r\n")) && n < len(buf) {
		var k int
		k, err = c.Read(buf[n:])
		n += k
	}
	if err == nil && !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 101 ")) {
		err = fmt.Errorf("handshake answered %q", buf[:n])
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// memInUse returns the heap and the goroutine stacks in use, after two collections.
func memInUse() (heap, stack int64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse), int64(m.StackInuse)
}

// settledMemInUse is memInUse once every server goroutine has parked: when two samples
// in a row agree within 1% (a connection still starting up allocates its buffers).
func settledMemInUse(b *testing.B) (heap, stack int64) {
	heap, stack = memInUse()
	testutil.WaitFor(b, "the memory in use to settle", func() bool {
		h, s := memInUse()
		prev := heap + stack
		heap, stack = h, s
		return abs64(h+s-prev)*100 <= prev
	})
	return heap, stack
}

func abs64(v int64) int64 { return max(v, -v) }

// idleCost is the memory an idle connection costs, in bytes.
type idleCost struct{ heap, stack float64 }

func (c idleCost) total() float64 { return c.heap + c.stack }

// idleConnBytes opens n idle WebSocket connections to a fresh server and returns the
// growth of heap and stack memory in use per connection (the client's raw socket
// included, the same for every server).
func idleConnBytes(b *testing.B, n int, start func(*testing.B) idleTarget) idleCost {
	srv := start(b)
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		if err := srv.stop(); err != nil {
			b.Errorf("stopping the server: %v", err)
		}
	}()
	heap0, stack0 := memInUse()
	for range n {
		c, err := rawWSUpgrade(srv.addr)
		if err != nil {
			b.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	testutil.WaitFor(b, fmt.Sprintf("%d connections served", n), func() bool { return srv.conns() >= n })
	heap1, stack1 := settledMemInUse(b)
	runtime.KeepAlive(conns)
	return idleCost{heap: float64(heap1-heap0) / float64(n), stack: float64(stack1-stack0) / float64(n)}
}

// BenchmarkWSIdleConnMemory measures the heap and stack an idle WebSocket connection
// costs through the gateway's real /ws ("B/conn": echo router, peer auth, the streaming
// Handler's reader and writer) and through a bare gorilla/websocket echo server
// ("bare-B/conn") in the same run, at 5,000 connections each, and their ratio. Targets:
// ≤ 24 KiB each, ratio ≤ 1.5. A first, discarded pass warms the runtime up (the first
// goroutines of a process allocate g structs that are kept for reuse, which would
// flatter whichever server is measured second).
func BenchmarkWSIdleConnMemory(b *testing.B) {
	const n = 5000
	var gw, bare idleCost
	for b.Loop() {
		for range 2 { // warm-up, then the measurement
			gw = idleConnBytes(b, n, gatewayIdleTarget)
			bare = idleConnBytes(b, n, bareIdleTarget)
		}
	}
	b.ReportMetric(gw.total(), "B/conn")
	b.ReportMetric(bare.total(), "bare-B/conn")
	b.ReportMetric(gw.total()/bare.total(), "ratio")
	b.ReportMetric(gw.stack, "stack-B/conn")
	b.ReportMetric(bare.stack, "bare-stack-B/conn")
}

// ---- time to first event ----

// percentile returns the p-th percentile (0 < p ≤ 100) of ds, sorted in place, in ms.
func percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := min(len(ds)-1, (len(ds)*p+99)/100-1)
	return float64(ds[max(i, 0)]) / float64(time.Millisecond)
}

// benchPost posts a JSON-RPC body as the bench peer.
func benchPost(ctx context.Context, c *http.Client, url, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := c.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("POST status %d", resp.StatusCode)
	}
	return resp, err
}

// BenchmarkTimeToFirstEvent measures, per turn of the echo agent on a fresh context, the
// time from sending to the first event over the WebSocket (SendStreamingMessage on an
// open socket) and over SSE (message/stream), next to a plain message/send round trip in
// the same run; reported as p50 and p99 in ms, with the differences of the p50s to the
// send's. Target: first event ≤ send p50 + 0.5 ms.
func BenchmarkTimeToFirstEvent(b *testing.B) {
	s := startBenchServer(b)
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	b.Cleanup(c.CloseIdleConnections)
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.Dial(wsURLOf(s), http.Header{"Authorization": {"Bearer " + benchToken}})
	if err != nil {
		b.Fatalf("Dial: %v", err)
	}
	resp.Body.Close()
	defer ws.Close()
	ctx := b.Context()

	var wsT, sseT, sendT []time.Duration
	i := 0
	round := func() {
		i++
		// WebSocket: SendStreamingMessage on the open socket; time to its first frame.
		id := fmt.Sprintf(`"w%d"`, i)
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"mw-%d","contextId":"ttfe-ws-%d","parts":[{"text":"hi"}]}}}`, id, i, i)
		_ = ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			b.Fatalf("WriteMessage: %v", err)
		}
		for first := true; ; first = false {
			ev, err := wsReadEvent(ws, id)
			if err != nil {
				b.Fatalf("SendStreamingMessage: %v", err)
			}
			if first {
				wsT = append(wsT, time.Since(start))
			}
			if ev.final() {
				break
			}
		}
		// SSE: message/stream; time to its first data line.
		start = time.Now()
		resp, err := benchPost(ctx, c, s.URL(), sendBody(true, fmt.Sprintf("ttfe-sse-%d", i), "hi", "", ""))
		if err != nil {
			b.Fatalf("message/stream: %v", err)
		}
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadSlice('\n')
			if err != nil {
				b.Fatalf("message/stream: no event: %v", err)
			}
			if bytes.HasPrefix(line, []byte("data: ")) {
				sseT = append(sseT, time.Since(start))
				break
			}
		}
		_, _ = io.Copy(io.Discard, rd)
		resp.Body.Close()
		// message/send: the whole round trip.
		start = time.Now()
		resp, err = benchPost(ctx, c, s.URL(), sendBody(false, fmt.Sprintf("ttfe-send-%d", i), "hi", "", ""))
		if err != nil {
			b.Fatalf("message/send: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sendT = append(sendT, time.Since(start))
	}
	for range 20 { // warm-up: connections, the ledger's first pages
		round()
	}
	wsT, sseT, sendT = wsT[:0], sseT[:0], sendT[:0]
	for b.Loop() {
		round()
	}
	ws50, ws99 := percentile(wsT, 50), percentile(wsT, 99)
	sse50, sse99 := percentile(sseT, 50), percentile(sseT, 99)
	send50, send99 := percentile(sendT, 50), percentile(sendT, 99)
	b.ReportMetric(ws50, "ws-p50-ms")
	b.ReportMetric(ws99, "ws-p99-ms")
	b.ReportMetric(sse50, "sse-p50-ms")
	b.ReportMetric(sse99, "sse-p99-ms")
	b.ReportMetric(send50, "send-p50-ms")
	b.ReportMetric(send99, "send-p99-ms")
	b.ReportMetric(ws50-send50, "ws-minus-send-p50-ms")
	b.ReportMetric(sse50-send50, "sse-minus-send-p50-ms")
}

// ---- fan-out ----

// fanoutGroup is n WebSocket subscribers of one context, each with a reader goroutine
// that reports, at every final status, how many events it read for the turn and when.
type fanoutGroup struct {
	cid     string
	conns   []*websocket.Conn
	reports chan fanoutReport
	exited  chan struct{} // one token per reader that has exited
}

type fanoutReport struct {
	events int
	at     time.Time // when the turn's final event arrived
}

func openFanoutGroup(b *testing.B, s *Server, cid string, n int) *fanoutGroup {
	b.Helper()
	g := &fanoutGroup{cid: cid, reports: make(chan fanoutReport, n), exited: make(chan struct{}, n)}
	b.Cleanup(g.close)
	before := s.runner.Streams()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	for i := range n {
		ws, resp, err := d.Dial(wsURLOf(s), http.Header{"Authorization": {"Bearer " + benchToken}})
		if err != nil {
			b.Fatalf("Dial %d: %v", i, err)
		}
		resp.Body.Close()
		g.conns = append(g.conns, ws)
		if err := ws.WriteMessage(websocket.TextMessage, []byte(subscribeFrame(fmt.Sprint("f", i), cid, 0))); err != nil {
			b.Fatalf("subscribe %d: %v", i, err)
		}
		go func() { // exits when its socket is closed (close)
			defer func() { g.exited <- struct{}{} }()
			events := 0
			for {
				_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
				_, msg, err := ws.ReadMessage()
				if err != nil {
					return
				}
				events++
				if bytes.Contains(msg, []byte(`"TASK_STATE_COMPLETED"`)) || bytes.Contains(msg, []byte(`"TASK_STATE_FAILED"`)) {
					g.reports <- fanoutReport{events: events, at: time.Now()}
					events = 0
				}
			}
		}()
	}
	testutil.WaitFor(b, fmt.Sprintf("%d subscriptions", n), func() bool { return s.runner.Streams() >= before+n })
	return g
}

// turn runs one turn on the group's context and waits until every subscriber has its
// final event: the events they read in all, the time from the send to the last final
// event, and the time between the first and the last final event.
func (g *fanoutGroup) turn(b *testing.B, s *Server, c *http.Client, text string) (events int, busy, spread time.Duration) {
	start := time.Now()
	done := sendAsync(b.Context(), c, s.URL(), benchToken, g.cid, text)
	var first, last time.Time
	for range g.conns {
		r := <-g.reports
		events += r.events
		if first.IsZero() || r.at.Before(first) {
			first = r.at
		}
		if r.at.After(last) {
			last = r.at
		}
	}
	if d := <-done; d.err != nil {
		b.Fatalf("turn %q: %v", text, d.err)
	}
	// The lease is released after the final event is published: wait for it.
	testutil.WaitFor(b, "the lease release", func() bool { return s.runner.Running() == 0 })
	return events, last.Sub(start), last.Sub(first)
}

func (g *fanoutGroup) close() {
	for _, ws := range g.conns {
		ws.Close()
	}
	for range g.conns {
		<-g.exited
	}
	g.conns = nil
}

// BenchmarkFanout100 measures the events per second delivered to 100 WebSocket
// subscribers of one context while a turn streams (the agent emits 500 small pieces,
// 0.5 ms apart; the gateway stores and publishes one REPLY_CHUNK per ledger commit, so
// a context's event rate is bounded by its commit rate). Reported: "events/s" delivered
// in all, "events/s/sub" per subscriber, "events/turn" per subscriber, "spread-ms" (from
// the first to the last subscriber receiving the turn's final event), and as the
// baseline the same turn with a single subscriber, in the same run: "1sub-events/s",
// "1sub-events/turn" and "per-sub-ratio" (events/s per subscriber with 100 over that
// with 1). "turn-ms" and "1sub-turn-ms" are the times from the send to the last final
// event: when the machine is busy the turn's chunk writer coalesces more text per commit
// (fewer, larger events), so equal turn times mean the reply's text reached every
// subscriber as fast as it reached one. The 100 clients run in the benchmark's process,
// so on a small machine they compete with the gateway for CPU.
func BenchmarkFanout100(b *testing.B) {
	const (
		subscribers = 100
		pieces      = 500
	)
	ag := scriptAgent{reply: func(ctx context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
		for i := range pieces {
			if err := emit(fmt.Sprintf("piece %04d of the reply ✓ ", i)); err != nil {
				return agent.Result{}, err
			}
			if err := sleepCtx(ctx, 500*time.Microsecond); err != nil {
				return agent.Result{}, err
			}
		}
		return agent.Result{}, nil
	}}
	s := startBenchServer(b, WithAgent(ag))
	c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil}}
	b.Cleanup(c.CloseIdleConnections)
	many := openFanoutGroup(b, s, "fanout-100", subscribers)
	one := openFanoutGroup(b, s, "fanout-1", 1)

	var events, oneEvents int
	var busy, oneBusy, spread time.Duration
	turns := 0
	for b.Loop() {
		turns++
		n, d, sp := many.turn(b, s, c, fmt.Sprint("turn ", turns))
		events, busy, spread = events+n, busy+d, spread+sp
		b.StopTimer()
		n, d, _ = one.turn(b, s, c, fmt.Sprint("turn ", turns))
		oneEvents, oneBusy = oneEvents+n, oneBusy+d
		b.StartTimer()
	}
	rate := float64(events) / busy.Seconds()
	oneRate := float64(oneEvents) / oneBusy.Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(rate/subscribers, "events/s/sub")
	b.ReportMetric(float64(events)/float64(turns*subscribers), "events/turn")
	b.ReportMetric(float64(spread)/float64(turns)/float64(time.Millisecond), "spread-ms")
	b.ReportMetric(oneRate, "1sub-events/s")
	b.ReportMetric(float64(oneEvents)/float64(turns), "1sub-events/turn")
	b.ReportMetric(float64(busy)/float64(turns)/float64(time.Millisecond), "turn-ms")
	b.ReportMetric(float64(oneBusy)/float64(turns)/float64(time.Millisecond), "1sub-turn-ms")
	b.ReportMetric(rate/subscribers/oneRate, "per-sub-ratio")
}
