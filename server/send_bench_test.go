package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/loadgen"
	"github.com/a2a-gateway/gateway/internal/telemetry"
)

// BenchmarkSendPath measures what one message/send costs the gateway process, without an
// HTTP client or the network: the request goes straight into the server's handler (peer
// auth, echo, the JSON-RPC transport, the turn, the durable ledger with group commit and
// fsync, the echo agent) from 64 goroutines over 64 contexts, with the 1 KiB message of
// `gateway bench`. Reported per turn: the process's CPU time (user + system, from
// getrusage; the committer, fsync and GC included) and, as usual, allocations. This is
// the figure to cut when the gateway is CPU-bound against the bare echo (issue #3): the
// load generator and the gateway share the machine's two cores.
func BenchmarkSendPath(b *testing.B) {
	benchSendPath(b, startBenchServer(b), 64)
}

// BenchmarkSendPathSerial is BenchmarkSendPath one turn at a time (one sender, one
// context): the latency of one conversation (issue #40 item 2), its wall time per turn
// being ns/op, every wait of the turn (two commits and their fdatasyncs, the hand-offs
// between goroutines) included.
func BenchmarkSendPathSerial(b *testing.B) {
	benchSendPath(b, startBenchServer(b), 1)
}

// BenchmarkSendPathTraced is BenchmarkSendPath with tracing on as `gateway serve` sets it
// up with OTEL_EXPORTER_OTLP_ENDPOINT (internal/telemetry: otlpwire, its OTLP/HTTP exporter, behind
// the batcher, every span sampled), exporting to a receiver in the test that reads each
// request and drops it: what tracing adds to a turn in CPU and allocations, the spans'
// export included (issue #37).
func BenchmarkSendPathTraced(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer sink.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": sink.URL, "OTEL_SERVICE_NAME": "bench"}
	tr, err := telemetry.Setup(context.Background(), func(k string) string { return env[k] })
	if err != nil || tr.Mode != telemetry.Exporting {
		b.Fatalf("telemetry.Setup = %v, %v", tr.Mode, err)
	}
	defer func() { _ = tr.Shutdown(context.Background()) }()
	benchSendPath(b, startBenchServerWith(b, func(c *Config) { c.TracerProvider = tr.Provider }), 64)
}

// benchSendPath sends b.N turns from contexts senders, each over its own context.
func benchSendPath(b *testing.B, s *Server, contexts int64) {
	h := s.http.Handler
	var next atomic.Int64
	text := strings.ReplaceAll(loadgen.DefaultMessage, `"`, `\"`)
	send := func(i, ctx int64) error {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-%d","contextId":"send-path-%d","parts":[{"kind":"text","text":"%s"}]}}}`,
			i, i, ctx, text)
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:40000"
		req.Host = "127.0.0.1" // not httptest's example.com, which the host guard refuses (421)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+benchToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(out), `"completed"`) {
			return fmt.Errorf("send %d: HTTP %d %.300s", i, res.StatusCode, out)
		}
		return nil
	}
	// One warm-up turn per context, so that creating the conversations is not measured.
	for i := range contexts {
		if err := send(i, i); err != nil {
			b.Fatal(err)
		}
	}
	next.Store(contexts)
	var senders atomic.Int64
	cpu0 := processCPU()
	start := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	if contexts == 1 {
		for i := range b.N {
			if err := send(contexts+int64(i), 0); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		runSenders(b, contexts, &senders, &next, send)
	}
	b.StopTimer()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/turn")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "turns/s")
}

// runSenders runs b.N sends from contexts goroutines (GOMAXPROCS is 2 here: contexts/2
// per P), each keeping to its own context, so that no send finds its context busy.
func runSenders(b *testing.B, contexts int64, senders, next *atomic.Int64, send func(i, ctx int64) error) {
	b.SetParallelism(int(contexts / 2))
	b.RunParallel(func(pb *testing.PB) {
		// Each sender keeps to its own context, so no send finds its context busy.
		ctx := (senders.Add(1) - 1) % contexts
		for pb.Next() {
			if err := send(next.Add(1), ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// processCPU is the user + system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
