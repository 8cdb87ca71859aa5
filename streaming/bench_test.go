package streaming

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/gorilla/websocket"
)

// idleServer is a WebSocket server under measurement.
type idleServer struct {
	addr  string      // host:port; the endpoint is /ws
	conns func() int  // upgraded connections being served
	stop  func(error) // after every client has gone
}

// ourServer serves this package's Handler.
func ourServer(tb testing.TB) idleServer {
	discard := slog.New(slog.DiscardHandler)
	h := NewHandler(a2a.NewDispatcher(worldHandler(), a2a.TransportConfig{Logger: discard}), newContextLog(), Config{Logger: discard, MaxConnsPerPeer: -1})
	mux := http.NewServeMux()
	mux.Handle("/ws", h)
	srv := httptest.NewServer(mux)
	return idleServer{
		addr:  srv.Listener.Addr().String(),
		conns: func() int { return h.Stats().Conns },
		stop: func(error) {
			h.Shutdown()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := h.Wait(ctx); err != nil {
				tb.Errorf("Wait() = %v", err)
			}
			srv.Close()
		},
	}
}

// bareServer is gorilla/websocket's echo example: the zero Upgrader, one goroutine per
// connection reading and echoing.
func bareServer(tb testing.TB) idleServer {
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
	srv := httptest.NewServer(mux)
	return idleServer{
		addr:  srv.Listener.Addr().String(),
		conns: func() int { return int(live.Load()) },
		stop: func(error) {
			// Give the connections until the hang guard to end; Close ends the rest.
			testutil.Until(testutil.Deadline(tb), func() bool { return live.Load() == 0 })
			srv.Close()
		},
	}
}

// rawUpgrade opens a WebSocket with a plain TCP connection and a hand-written handshake,
// so that the client side costs the same few hundred bytes for both servers.
func rawUpgrade(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", addr)
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
	return c, nil
}

func heapAndStacks() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// idleBytesPerConn opens n idle WebSocket connections to the server and returns the
// growth of heap and stack memory in use per connection (client side included: a TCP
// socket, the same for every server).
func idleBytesPerConn(b *testing.B, n int, start func(testing.TB) idleServer) float64 {
	srv := start(b)
	defer srv.stop(nil)
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	before := heapAndStacks()
	for range n {
		c, err := rawUpgrade(srv.addr)
		if err != nil {
			b.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	testutil.WaitFor(b, fmt.Sprintf("%d connections served", n), func() bool { return srv.conns() >= n })
	// Every server goroutine has parked once two samples in a row agree within 1% (a
	// connection still starting up allocates its buffers).
	after := heapAndStacks()
	testutil.WaitFor(b, "the memory in use to settle", func() bool {
		prev := after
		after = heapAndStacks()
		return max(after-prev, prev-after)*100 <= prev
	})
	runtime.KeepAlive(conns)
	return float64(after-before) / float64(n)
}

// BenchmarkIdleConnMemory measures the memory an idle WebSocket connection costs through
// this package's Handler ("B/conn") and through a bare gorilla/websocket echo server
// ("bare-B/conn") in the same run, and their ratio. Each measurement opens 2,000
// connections whatever b.N is. A first, discarded pass warms the runtime up: the first
// 4,000 goroutines of a process allocate g structs that the runtime keeps and reuses, so
// without it whichever server is measured second would look ~0.5-1 KiB cheaper per
// connection.
func BenchmarkIdleConnMemory(b *testing.B) {
	const n = 2000
	var ours, bare float64
	for b.Loop() {
		for range 2 { // warm-up, then the measurement
			ours = idleBytesPerConn(b, n, ourServer)
			bare = idleBytesPerConn(b, n, bareServer)
		}
	}
	b.ReportMetric(ours, "B/conn")
	b.ReportMetric(bare, "bare-B/conn")
	b.ReportMetric(ours/bare, "ratio")
}
