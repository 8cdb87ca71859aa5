package streaming

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/tracing"
)

// Source is what the WebSocket needs beyond the A2A methods: a whole context's event
// stream.
type Source interface {
	// SubscribeContext streams every event of the caller's context contextID (all its
	// tasks) with Seq > afterSeq, first replayed from the ledger then live, in seq order,
	// with no gap and no duplicate. Next blocks until an event; the stream does not end by
	// itself (io.EOF only when the gateway stops). Errors are a2a errors (e.g.
	// [a2a.InvalidParams]). The caller is identified by ctx (the upgrade request's).
	SubscribeContext(ctx context.Context, contextID string, afterSeq uint64) (a2a.Stream, error)
}

// Defaults of the zero [Config] fields.
const (
	// DefaultSendBuffer is the number of frames queued per connection. One frame is one
	// event (a reply chunk, a status update) or one response; 256 absorbs a whole typical
	// reply or replay burst on top of the kernel's socket buffer, so only a consumer that
	// has really stopped reading overflows it, while a stalled connection pins at most 256
	// frames. The queue holds pointers (2 KiB) and is allocated on the connection's first
	// call or stream, so an idle connection pays nothing for it.
	DefaultSendBuffer   = 256
	DefaultWriteTimeout = 10 * time.Second
	DefaultPingInterval = 30 * time.Second
	DefaultMaxInFlight  = 32
	DefaultSlowAfter    = 2 * time.Second
)

// closeGrace bounds the wait for the peer's close frame after ours, before the socket is
// closed under it.
const closeGrace = time.Second

// Config configures [NewHandler]. The zero value is usable.
type Config struct {
	// AllowedOrigins lists the browser Origins allowed to connect ("https://app.example",
	// compared case-insensitively), "*" allows any. Requests without an Origin (non-browser
	// clients) are always allowed; with an empty list they are the only ones. The
	// request's Host is never compared with the Origin: a DNS rebinding page sends its
	// own name as both, so a server's own origins (its public URL's, its loopback ones)
	// must be listed here.
	AllowedOrigins []string
	SendBuffer     int           // frames queued per connection; 0: DefaultSendBuffer
	WriteTimeout   time.Duration // per frame; 0: DefaultWriteTimeout
	PingInterval   time.Duration // 0: DefaultPingInterval; a peer silent for 2× it is dropped
	ReadLimit      int64         // max inbound frame bytes; 0: a2a.DefaultMaxBodyBytes
	MaxInFlight    int           // concurrent calls + streams per connection; 0: DefaultMaxInFlight
	// SlowAfter is how long a stream waits for room in a full send queue before its
	// consumer counts as slow and the connection is closed; 0: DefaultSlowAfter. A Source
	// never waits for its readers (the turn's feed falls back to the ledger for a reader
	// that lags), so waiting here holds up only this stream, and a fast consumer that
	// takes a long replay in a burst is not evicted.
	SlowAfter time.Duration
	// MaxConnsPerPeer is the most connections one peer (see PeerOf) may hold open at
	// once; one more is refused before the upgrade with 429. 0: DefaultMaxConnsPerPeer;
	// negative: no limit.
	MaxConnsPerPeer int
	// PeerOf names the peer of an upgrade request for MaxConnsPerPeer, e.g. the identity
	// the authentication middleware put in its context; nil: the remote IP.
	PeerOf func(r *http.Request) string
	// OnLimit, when set, is called with "ws_conns" for every connection refused by
	// MaxConnsPerPeer (for a metric). It must not block.
	OnLimit func(limit string)
	// SubscribeAs decides a conversations/subscribe that names the context's owner
	// ("peer"): it returns the context to subscribe with (acting as that peer) and true
	// when the connection's caller may follow that peer's contexts (package server: the
	// caller itself, or the console's operator session). A refusal is answered with
	// invalid params before any lookup, so it never tells whether the context exists.
	// nil: "peer" is always refused.
	SubscribeAs func(ctx context.Context, peer string) (context.Context, bool)
	// SubscribeOnly reports whether a connection (by its request context) may only follow
	// contexts: conversations/subscribe and unsubscribe are served, every other method is
	// refused (package server: the console's operator session, which is no peer). nil: none.
	SubscribeOnly func(ctx context.Context) bool
	Logger        *slog.Logger // nil: slog.Default()
	// TracerProvider makes a server span of every request frame (a call until it is
	// answered, a stream until it ends), child of the trace context in the frame's
	// params.metadata (traceparent, tracestate) or else of the upgrade request's. nil:
	// no spans, and a frame's metadata is not read for one.
	TracerProvider trace.TracerProvider
}

// Stats is a snapshot of the handler's load, for metrics gauges.
type Stats struct {
	Conns   int // open connections
	Streams int // running streams (A2A streaming methods and context subscriptions)
}

// Handler serves GET /ws: JSON-RPC 2.0 over a WebSocket (see the package doc). Its zero
// value is not usable; use [NewHandler].
type Handler struct {
	d       *a2a.Dispatcher
	src     Source
	cfg     Config
	tracer  trace.Tracer // nil without Config.TracerProvider
	log     *slog.Logger
	up      websocket.Upgrader
	origins map[string]bool // lower-case allowed origins; nil with anyOrigin
	anyOrig bool
	streams atomic.Int64

	mu       sync.Mutex
	conns    map[*conn]struct{}
	perPeer  map[string]int // connections and upgrades in progress per peer (Config.PeerOf)
	shutdown bool
	drained  chan struct{} // closed when conns becomes empty; nil while nobody waits
}

// NewHandler returns the WebSocket endpoint. d serves the A2A methods; src serves
// conversations/subscribe (nil: that method answers -32004 unsupported operation).
func NewHandler(d *a2a.Dispatcher, src Source, cfg Config) *Handler {
	if cfg.SendBuffer <= 0 {
		cfg.SendBuffer = DefaultSendBuffer
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = a2a.DefaultMaxBodyBytes
	}
	if cfg.SlowAfter <= 0 {
		cfg.SlowAfter = DefaultSlowAfter
	}
	var tracer trace.Tracer
	if cfg.TracerProvider != nil {
		tracer = tracing.Tracer(cfg.TracerProvider)
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.MaxConnsPerPeer == 0 {
		cfg.MaxConnsPerPeer = DefaultMaxConnsPerPeer
	}
	l := cfg.Logger
	if l == nil {
		l = slog.Default()
	}
	h := &Handler{d: d, src: src, cfg: cfg, tracer: tracer, log: l.With("component", "websocket"), conns: map[*conn]struct{}{}, perPeer: map[string]int{}}
	for _, o := range cfg.AllowedOrigins {
		o = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/"))
		if o == "*" {
			h.anyOrig = true
		}
		if h.origins == nil {
			h.origins = map[string]bool{}
		}
		h.origins[o] = true
	}
	h.up = websocket.Upgrader{
		HandshakeTimeout: cfg.WriteTimeout,
		// Idle memory: the reader reuses the 4 KiB buffer it inherits from net/http (the
		// zero ReadBufferSize), and the write buffer comes from a pool only while a frame
		// is being written, so an idle connection holds no write buffer.
		WriteBufferSize: 4096,
		WriteBufferPool: &sync.Pool{},
		// ServeHTTP checks the Origin before upgrading, with the configured policy.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	return h
}

// ServeHTTP upgrades a GET request to a WebSocket and serves it until the connection
// closes; it answers 405 to other methods, 403 to a disallowed Origin, 503 once
// [Handler.Shutdown] has been called and 429 to a peer at Config.MaxConnsPerPeer, all
// before upgrading. The request's context (which
// carries the caller's authentication) gives its values to every call and stream on
// the connection; ServeHTTP returns once the connection is upgraded, and the
// connection runs on its own goroutines until it closes (see [Handler.Wait]).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "use GET with a WebSocket upgrade", http.StatusMethodNotAllowed)
		return
	}
	if !h.originAllowed(r) {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	if h.isShutdown() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	peer := h.peerOf(r)
	if !h.admitPeer(peer) {
		h.refusePeer(w, r, peer)
		return
	}
	// Headers set on w before the upgrade (a middleware's X-Request-Id) go out with the
	// 101 response: the upgrader writes its own.
	ws, err := h.up.Upgrade(w, r, w.Header())
	if err != nil {
		h.releasePeer(peer)
		return // Upgrade has answered with an HTTP error
	}
	// The connection outlives this call: net/http cancels r's context when ServeHTTP
	// returns, so the connection's context keeps its values only.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	c := newConn(h, ws, cancel)
	if !h.register(c) {
		cancel(ErrClosed)
		h.releasePeer(peer)
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(h.cfg.WriteTimeout))
		_ = ws.Close()
		return
	}
	// The reader runs on a goroutine of its own, not under ServeHTTP: an idle
	// connection's reader then holds none of the frames of the router and middleware
	// above this handler on its stack, for the connection's whole life. It exits when
	// the connection has ended; it stays registered (see Wait) until then.
	go h.serve(ctx, c, r, peer)
}

// serve runs connection c of request r until it ends: its writer, its reader, and
// every call and stream it started; then releases c's place.
func (h *Handler) serve(ctx context.Context, c *conn, r *http.Request, peer string) {
	defer h.releasePeer(peer)
	defer c.cancel(ErrClosed)
	defer h.unregister(c)
	c.wg.Go(func() { c.writeLoop(ctx) }) // exits once it has closed the socket
	c.readLoop(ctx, r)                   // returns when the socket fails or closes
	c.close(0, "", nil)                  // the peer is gone: wind the writer down
	c.wg.Wait()                          // the writer, every call and every stream
}

// originAllowed applies Config.AllowedOrigins (see there).
func (h *Handler) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || h.anyOrig {
		return true
	}
	return h.origins[strings.ToLower(strings.TrimSuffix(origin, "/"))]
}

func (h *Handler) isShutdown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.shutdown
}

func (h *Handler) register(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shutdown {
		return false
	}
	h.conns[c] = struct{}{}
	return true
}

func (h *Handler) unregister(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, c)
	if len(h.conns) == 0 && h.drained != nil {
		close(h.drained)
		h.drained = nil
	}
}

// Shutdown refuses new connections (503) and sends every open connection a
// CloseGoingAway frame; their calls and streams are canceled. It does not wait: see
// [Handler.Wait]. It is meant for http.Server.RegisterOnShutdown and may be called more
// than once.
func (h *Handler) Shutdown() {
	h.mu.Lock()
	h.shutdown = true
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.close(websocket.CloseGoingAway, "server shutting down", nil)
	}
}

// Wait blocks until every connection has ended, its goroutines included (calls end when
// the a2a.Handler honours their canceled context). It returns ctx.Err() if ctx is done
// first.
func (h *Handler) Wait(ctx context.Context) error {
	for {
		h.mu.Lock()
		if len(h.conns) == 0 {
			h.mu.Unlock()
			return nil
		}
		if h.drained == nil {
			h.drained = make(chan struct{})
		}
		ch := h.drained
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Stats returns the number of open connections and running streams.
func (h *Handler) Stats() Stats {
	h.mu.Lock()
	n := len(h.conns)
	h.mu.Unlock()
	return Stats{Conns: n, Streams: int(h.streams.Load())}
}
