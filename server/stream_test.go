package server

// Gateway-level tests of the live streams (DESIGN §7, W-1..W-4): the real gateway
// in-process on 127.0.0.1, real gorilla/websocket clients on GET /ws and real HTTP (SSE)
// clients on POST /, checked against each other, tasks/get and the ledger.

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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/streaming"
)

// ---- test agents ----

// scriptAgent is an agent whose reply is a func field. It takes no history, so a turn
// costs what the stream costs.
type scriptAgent struct {
	reply func(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error)
}

func (a scriptAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	return a.reply(ctx, t, emit)
}

func (scriptAgent) UsesContext() bool { return false }

// piecer cuts a reply into pieces at pseudo-random BYTE positions, so multi-byte
// characters are split between pieces, and pauses now and then so that the gateway
// stores several REPLY_CHUNK entries.
type piecer struct {
	maxPiece   int           // pieces hold 1..maxPiece bytes
	pauseEvery int           // pause after every pauseEvery-th piece; 0: never
	pause      time.Duration // how long
}

// emit sends text through emit in pieces; it returns how many piece boundaries fell
// inside a UTF-8 character.
func (p piecer) emit(ctx context.Context, emit agent.Emit, text string, seed uint64) (splits int, err error) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := 1; len(text) > 0; i++ {
		n := min(1+r.IntN(p.maxPiece), len(text))
		if n < len(text) && !utf8.RuneStart(text[n]) {
			splits++
		}
		if err := emit(text[:n]); err != nil {
			return splits, err
		}
		text = text[n:]
		if p.pauseEvery > 0 && i%p.pauseEvery == 0 {
			if err := sleepCtx(ctx, p.pause); err != nil {
				return splits, err
			}
		}
	}
	return splits, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ---- server ----

// startWSServer is startServer plus a check, at cleanup, that every WebSocket
// connection and every stream has ended once the test's sockets are closed (their
// cleanups run first: they are registered later).
func startWSServer(t *testing.T, cfg Config, opts ...Option) *Server {
	t.Helper()
	s := startServer(t, cfg, opts...)
	t.Cleanup(func() { waitWSIdle(t, s) })
	return s
}

// waitWSIdle waits until s has no WebSocket connection and no open stream (a hang guard
// from the test's deadline bounds the wait).
func waitWSIdle(t testing.TB, s *Server) {
	t.Helper()
	idle := func() bool { return s.ws.Stats() == (streaming.Stats{}) && s.runner.Streams() == 0 }
	if !testutil.Until(testutil.Deadline(t), idle) {
		t.Errorf("after the test: websocket stats %+v, runner streams %d; want all 0", s.ws.Stats(), s.runner.Streams())
	}
}

// waitUntil polls cond until it holds (see testutil.WaitFor).
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, cond)
}

// ---- events, whatever transport and dialect brought them ----

// streamEvent is one stream event reduced to what the transports must agree on.
type streamEvent struct {
	Seq        uint64
	Kind       string // "task", "status", "artifact", "message"
	TaskID     string
	State      string // task and status events, in v0.3 spelling: "working", "completed"…
	ArtifactID string
	Text       string
	Append     bool
	LastChunk  bool
}

// final reports whether ev ends its task's stream.
func (ev streamEvent) final() bool {
	switch ev.State {
	case "completed", "failed", "canceled", "rejected", "input-required", "auth-required":
		return ev.Kind == "status"
	}
	return false
}

// wireBody holds the fields of any event object of either dialect.
type wireBody struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	TaskID string `json:"taskId"`
	Status *struct {
		State string `json:"state"`
	} `json:"status"`
	Artifact *struct {
		ArtifactID string `json:"artifactId"`
		Parts      []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifact"`
	Append    bool `json:"append"`
	LastChunk bool `json:"lastChunk"`
}

// parseEvent decodes an event result (v1.0 StreamResponse wrapper or v0.3 bare object
// with kind); a "seq" member, when present, overrides seq.
func parseEvent(result []byte, seq uint64) (streamEvent, error) {
	var top struct {
		Seq            *uint64         `json:"seq"`
		Kind           string          `json:"kind"`
		Task           json.RawMessage `json:"task"`
		Message        json.RawMessage `json:"message"`
		StatusUpdate   json.RawMessage `json:"statusUpdate"`
		ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
	}
	if err := json.Unmarshal(result, &top); err != nil {
		return streamEvent{}, fmt.Errorf("event %.200s: %w", result, err)
	}
	if top.Seq != nil {
		seq = *top.Seq
	}
	ev := streamEvent{Seq: seq}
	body := result
	switch {
	case top.Task != nil:
		ev.Kind, body = "task", top.Task
	case top.Message != nil:
		ev.Kind, body = "message", top.Message
	case top.StatusUpdate != nil:
		ev.Kind, body = "status", top.StatusUpdate
	case top.ArtifactUpdate != nil:
		ev.Kind, body = "artifact", top.ArtifactUpdate
	default:
		ev.Kind = map[string]string{"task": "task", "message": "message", "status-update": "status", "artifact-update": "artifact"}[top.Kind]
	}
	if ev.Kind == "" {
		return ev, fmt.Errorf("event %.200s: not a task, message, status or artifact update", result)
	}
	var w wireBody
	if err := json.Unmarshal(body, &w); err != nil {
		return ev, fmt.Errorf("event %.200s: %w", result, err)
	}
	ev.TaskID = w.TaskID
	if ev.Kind == "task" {
		ev.TaskID = w.ID
	}
	if w.Status != nil {
		ev.State = strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(w.Status.State, "TASK_STATE_")), "_", "-")
	}
	if w.Artifact != nil {
		ev.ArtifactID = w.Artifact.ArtifactID
		var b strings.Builder
		for _, p := range w.Artifact.Parts {
			b.WriteString(p.Text)
		}
		ev.Text = b.String()
		ev.Append, ev.LastChunk = w.Append, w.LastChunk
	}
	return ev, nil
}

// seqs lists the events' seqs.
func seqs(evs []streamEvent) []uint64 {
	out := make([]uint64, len(evs))
	for i := range evs {
		out[i] = evs[i].Seq
	}
	return out
}

// checkIncreasing reports a seq that does not increase (a duplicate or a reorder).
func checkIncreasing(evs []streamEvent) error {
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			return fmt.Errorf("event %d has seq %d after seq %d", i, evs[i].Seq, evs[i-1].Seq)
		}
	}
	return nil
}

// taskEvents keeps the events of task id.
func taskEvents(evs []streamEvent, id string) []streamEvent {
	var out []streamEvent
	for _, ev := range evs {
		if ev.TaskID == id {
			out = append(out, ev)
		}
	}
	return out
}

// ---- WebSocket client ----

func wsURLOf(s *Server) string { return "ws://" + s.Addr() + "/ws" }

// wsDial opens a WebSocket to s's /ws with "Authorization: Bearer token" (none when
// token is ""); it is closed at cleanup.
func wsDial(t testing.TB, s *Server, token string, opts ...func(*websocket.Dialer)) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	for _, o := range opts {
		o(&d)
	}
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	ws, resp, err := d.Dial(wsURLOf(s), h)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("Dial(%s) error = %v (HTTP %d), want nil", wsURLOf(s), err, status)
	}
	resp.Body.Close()
	t.Cleanup(func() { ws.Close() })
	return ws
}

// smallRcvBuf makes a client that does not read stall the server after ~100 KB: a tiny
// receive buffer (set before connecting, so the advertised window stays small) and a
// small MSS (536 bytes, the IPv4 default), because the server's socket send buffer
// autotunes from the MSS and would hold ~3 MB on loopback (64 KiB MTU) otherwise.
func smallRcvBuf(d *websocket.Dialer) {
	nd := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			if serr == nil {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 536)
			}
		}); err != nil {
			return err
		}
		return serr
	}}
	d.NetDialContext = nd.DialContext
}

func wsWrite(t testing.TB, ws *websocket.Conn, format string, args ...any) {
	t.Helper()
	_ = ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := ws.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, format, args...)); err != nil {
		t.Fatalf("WriteMessage() error = %v, want nil", err)
	}
}

// wsFrameMsg is a JSON-RPC response frame.
type wsFrameMsg struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readGuard bounds a wait for one frame: a hang guard, far beyond any wait of a passing
// test on a busy machine.
const readGuard = 2 * time.Minute

// wsReadFrame reads one frame (within readGuard); every frame must be valid UTF-8 JSON-RPC.
func wsReadFrame(ws *websocket.Conn) (wsFrameMsg, error) {
	_ = ws.SetReadDeadline(time.Now().Add(readGuard))
	typ, b, err := ws.ReadMessage()
	if err != nil {
		return wsFrameMsg{}, err
	}
	if typ != websocket.TextMessage || !utf8.Valid(b) {
		return wsFrameMsg{}, fmt.Errorf("frame type %d, valid UTF-8 %v: %.200q", typ, utf8.Valid(b), b)
	}
	var f wsFrameMsg
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("frame %.200s: %w", b, err)
	}
	return f, nil
}

// wsReadEvent reads the next frame, which must be an event of the stream with id (the
// id's JSON, e.g. `"sub"`).
func wsReadEvent(ws *websocket.Conn, id string) (streamEvent, error) {
	f, err := wsReadFrame(ws)
	if err != nil {
		return streamEvent{}, err
	}
	if string(f.ID) != id || f.Error != nil {
		return streamEvent{}, fmt.Errorf("frame id %s error %+v result %.200s, want an event of stream %s", f.ID, f.Error, f.Result, id)
	}
	ev, err := parseEvent(f.Result, 0)
	if err == nil && ev.Seq == 0 {
		err = fmt.Errorf("event %.200s has no seq", f.Result)
	}
	return ev, err
}

// wsCollect reads events of stream id until stop accepts one (included).
func wsCollect(ws *websocket.Conn, id string, stop func(streamEvent) bool) ([]streamEvent, error) {
	var out []streamEvent
	for {
		ev, err := wsReadEvent(ws, id)
		if err != nil {
			return out, fmt.Errorf("after %d events: %w", len(out), err)
		}
		out = append(out, ev)
		if stop(ev) {
			return out, nil
		}
	}
}

// finalOf returns a stop func for wsCollect: the final status of task id ("" any task).
func finalOf(id string) func(streamEvent) bool {
	return func(ev streamEvent) bool { return ev.final() && (id == "" || ev.TaskID == id) }
}

func subscribeFrame(id, contextID string, afterSeq uint64) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"conversations/subscribe","params":{"contextId":%q,"afterSeq":%d}}`, id, contextID, afterSeq)
}

// ---- HTTP client ----

// httpRPCErr posts a JSON-RPC body (v1 adds the A2A-Version header, token the bearer)
// and decodes the response; safe to call from any goroutine.
func httpRPCErr(ctx context.Context, c *http.Client, url, token string, v1 bool, body string) (rpcResponse, error) {
	var out rpcResponse
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return out, err
	}
	req.Header.Set("Content-Type", "application/json")
	if v1 {
		req.Header.Set("A2A-Version", "1.0")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return out, err
	}
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("POST status %d: %.200s", resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("response %.200s: %w", b, err)
	}
	if out.Error != nil {
		return out, fmt.Errorf("JSON-RPC error %d %s", out.Error.Code, out.Error.Message)
	}
	return out, nil
}

// sendAsync runs a blocking v0.3 message/send of text on contextID in the background;
// the channel yields its error (nil when the turn completed) and the time it took.
func sendAsync(ctx context.Context, c *http.Client, url, token, contextID, text string) <-chan sendDone {
	done := make(chan sendDone, 1)
	start := time.Now()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-%d","contextId":%q,"parts":[{"kind":"text","text":%q}]}}}`,
		time.Now().UnixNano(), contextID, text)
	go func() { // exits when the send returns (bounded by ctx and the client's timeout)
		res, err := httpRPCErr(ctx, c, url, token, false, body)
		if err == nil {
			var task struct {
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			}
			if err = json.Unmarshal(res.Result, &task); err == nil && task.Status.State != "completed" {
				err = fmt.Errorf("message/send ended %q, want completed", task.Status.State)
			}
		}
		done <- sendDone{err: err, took: time.Since(start)}
	}()
	return done
}

type sendDone struct {
	err  error
	took time.Duration
}

// sseReader reads an SSE response of the A2A transport: `id: <seq>`, `data: <response>`.
type sseReader struct {
	body  io.ReadCloser
	rd    *bufio.Reader
	reqID string
}

// sseOpen posts a streaming method; lastEventID is sent as Last-Event-ID unless "".
func sseOpen(ctx context.Context, c *http.Client, url, token string, v1 bool, lastEventID, body string) (*sseReader, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if v1 {
		req.Header.Set("A2A-Version", "1.0")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("POST status %d, Content-Type %q: %.200s", resp.StatusCode, ct, b)
	}
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal([]byte(body), &env)
	return &sseReader{body: resp.Body, rd: bufio.NewReader(resp.Body), reqID: string(env.ID)}, nil
}

// next returns the next event; io.EOF when the stream ended.
func (r *sseReader) next() (streamEvent, error) {
	var seq uint64
	var data []byte
	for {
		line, err := r.rd.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) == 0 && data == nil {
				return streamEvent{}, io.EOF
			}
			return streamEvent{}, err
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case len(line) == 0:
			if data == nil {
				continue
			}
			if !utf8.Valid(data) {
				return streamEvent{}, fmt.Errorf("SSE data is not valid UTF-8: %.200q", data)
			}
			var f wsFrameMsg
			if err := json.Unmarshal(data, &f); err != nil {
				return streamEvent{}, fmt.Errorf("SSE data %.200s: %w", data, err)
			}
			if f.Error != nil || string(f.ID) != r.reqID {
				return streamEvent{}, fmt.Errorf("SSE frame id %s error %+v, want an event of request %s", f.ID, f.Error, r.reqID)
			}
			if seq == 0 {
				return streamEvent{}, fmt.Errorf("SSE event without an id: %.200s", data)
			}
			return parseEvent(f.Result, seq)
		case bytes.HasPrefix(line, []byte("id: ")):
			n, err := strconv.ParseUint(string(line[4:]), 10, 64)
			if err != nil {
				return streamEvent{}, fmt.Errorf("SSE id %q: %w", line, err)
			}
			seq = n
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[6:]...)
		}
	}
}

// collect reads events until the stream ends.
func (r *sseReader) collect() ([]streamEvent, error) {
	var out []streamEvent
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("after %d events: %w", len(out), err)
		}
		out = append(out, ev)
	}
}

func (r *sseReader) close() { r.body.Close() }

// ---- 1. byte-exact replies ----

// checkReplyStream checks the artifact events of one task's stream: the chunks are valid
// UTF-8 and append-only (append:true after the first, lastChunk:true on the last and only
// there, one artifactId), they concatenate to want byte for byte, the seqs increase, and
// the stream ends with the task's completed status. It returns the artifact's id and its
// number of chunks.
func checkReplyStream(t *testing.T, who string, evs []streamEvent, want string) (artifactID string, chunks int) {
	t.Helper()
	if err := checkIncreasing(evs); err != nil {
		t.Errorf("%s: %v", who, err)
	}
	if n := len(evs); n == 0 || evs[n-1].Kind != "status" || evs[n-1].State != "completed" {
		t.Errorf("%s: stream does not end with the completed status (%d events)", who, len(evs))
	}
	var got strings.Builder
	for i, ev := range evs {
		if ev.Kind != "artifact" {
			continue
		}
		if chunks == 0 {
			artifactID = ev.ArtifactID
		}
		if ev.ArtifactID != artifactID {
			t.Errorf("%s: event %d (seq %d) artifactId %q, want %q: a second artifact", who, i, ev.Seq, ev.ArtifactID, artifactID)
		}
		if ev.Append != (chunks > 0) {
			t.Errorf("%s: chunk %d (seq %d) append = %v, want %v: only the first chunk may start the artifact (no replace)", who, chunks, ev.Seq, ev.Append, chunks > 0)
		}
		if ev.LastChunk != (i == len(evs)-2) {
			t.Errorf("%s: chunk %d (seq %d) lastChunk = %v, want it on the last chunk only", who, chunks, ev.Seq, ev.LastChunk)
		}
		if !utf8.ValidString(ev.Text) || strings.ContainsRune(ev.Text, utf8.RuneError) {
			t.Errorf("%s: chunk %d (seq %d) is not valid UTF-8 (or holds U+FFFD): a character was split", who, chunks, ev.Seq)
		}
		got.WriteString(ev.Text)
		chunks++
	}
	checkSameText(t, who+": concatenated chunks", got.String(), want)
	return artifactID, chunks
}

// checkSameText compares long texts, reporting the first differing byte.
func checkSameText(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s: %d bytes, want %d; first difference at byte %d: got %.40q, want %.40q", what, len(got), len(want), i, got[i:], want[i:])
}

// TestStreamRepliesByteExact (W-2): replies of ~100 KB and of emoji + CJK text, emitted in
// pieces cut at arbitrary byte positions, arrive byte-exact and append-only on every path:
// the sender's stream (SendStreamingMessage over the WebSocket, or message/stream over
// SSE), a conversations/subscribe watcher, tasks/get, and the ledger (the AGENT_REPLY and
// the concatenation of its REPLY_CHUNK entries). The 100 KB reply's AGENT_REPLY part is
// over the ledger's 64 KiB large-part size, so tasks/get and the check here read it back
// from the artifact store.
func TestStreamRepliesByteExact(t *testing.T) {
	var big strings.Builder
	for i := 0; big.Len() < 100<<10; i++ {
		fmt.Fprintf(&big, "line %05d: the quick brown fox — ünïcödé ✓ 🚀 jumps over 世界\n", i)
	}
	replies := map[string]struct {
		text string
		p    piecer
	}{
		"big":   {big.String(), piecer{maxPiece: 1024, pauseEvery: 2, pause: time.Millisecond}},
		"emoji": {strings.Repeat("héllo 🌍🚀 世界、こんにちは ✓ ", 400), piecer{maxPiece: 7, pauseEvery: 16, pause: time.Millisecond}},
	}
	var splits atomic.Int64
	ag := scriptAgent{reply: func(ctx context.Context, tn agent.Turn, emit agent.Emit) (agent.Result, error) {
		r, ok := replies[tn.Text]
		if !ok {
			return agent.Result{}, fmt.Errorf("no reply for %q", tn.Text)
		}
		var seed uint64 // a different cut per context, the same on every run
		for _, b := range []byte(tn.ContextID) {
			seed = seed*31 + uint64(b)
		}
		n, err := r.p.emit(ctx, emit, r.text, seed)
		splits.Add(int64(n))
		return agent.Result{}, err
	}}
	s := startWSServer(t, testConfig(t), WithAgent(ag))
	c := newHTTPClient(t)
	tests := []struct {
		name, reply string
		sse         bool // message/stream over HTTP; else SendStreamingMessage over the socket
	}{
		{name: "100KB over websocket", reply: "big"},
		{name: "100KB over SSE", reply: "big", sse: true},
		{name: "emoji and CJK over websocket", reply: "emoji"},
		{name: "emoji and CJK over SSE", reply: "emoji", sse: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testutil.Context(t)
			t.Cleanup(func() { waitWSIdle(t, s) }) // runs after this subtest's sockets close
			want := replies[tt.reply].text
			cid := fmt.Sprintf("exact-%d", i)
			sub := wsDial(t, s, "")
			wsWrite(t, sub, "%s", subscribeFrame("sub", cid, 0))
			waitUntil(t, "the subscription", func() bool { return s.runner.Streams() == 1 })

			var sent []streamEvent
			var err error
			if tt.sse {
				var r *sseReader
				r, err = sseOpen(ctx, c, s.URL(), "", false, "", sendBody(true, cid, tt.reply, "", ""))
				if err != nil {
					t.Fatalf("message/stream: %v", err)
				}
				sent, err = r.collect()
				r.close()
			} else {
				snd := wsDial(t, s, "")
				wsWrite(t, snd, `{"jsonrpc":"2.0","id":"send","method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-%s","contextId":%q,"parts":[{"text":%q}]}}}`, cid, cid, tt.reply)
				sent, err = wsCollect(snd, `"send"`, finalOf(""))
			}
			if err != nil {
				t.Fatalf("sender's stream: %v", err)
			}
			if len(sent) == 0 || sent[0].Kind != "task" {
				t.Fatalf("sender's stream starts with %+v, want the task", sent)
			}
			taskID := sent[0].TaskID
			watched, err := wsCollect(sub, `"sub"`, finalOf(taskID))
			if err != nil {
				t.Fatalf("subscriber: %v", err)
			}
			if diff := cmp.Diff(sent, watched); diff != "" {
				t.Errorf("subscriber's events differ from the sender's (-sender +subscriber):\n%.2000s", diff)
			}
			artifactID, chunks := checkReplyStream(t, "sender", sent, want)
			checkReplyStream(t, "subscriber", watched, want)
			if chunks < 3 {
				t.Errorf("the reply streamed as %d chunks, want several (the agent paused while emitting)", chunks)
			}

			// tasks/get folds the same artifact.
			res, err := httpRPCErr(ctx, c, s.URL(), "", false, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":%q}}`, taskID))
			if err != nil {
				t.Fatalf("tasks/get: %v", err)
			}
			var task struct {
				Artifacts []struct {
					ArtifactID string `json:"artifactId"`
					Parts      []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"artifacts"`
			}
			if err := json.Unmarshal(res.Result, &task); err != nil || len(task.Artifacts) != 1 {
				t.Fatalf("tasks/get result: %v, %d artifacts, want 1", err, len(task.Artifacts))
			}
			if task.Artifacts[0].ArtifactID != artifactID {
				t.Errorf("tasks/get artifactId = %q, want the streamed %q", task.Artifacts[0].ArtifactID, artifactID)
			}
			var folded strings.Builder
			for _, p := range task.Artifacts[0].Parts {
				folded.WriteString(p.Text)
			}
			checkSameText(t, "tasks/get artifact", folded.String(), want)

			// The ledger: the AGENT_REPLY, and its REPLY_CHUNK entries in seq order.
			entries, err := s.ledger.Range(ctx, contextid.LocalOwner, cid, 0, 0)
			if err == nil {
				err = s.ledger.Inflate(ctx, entries)
			}
			if err != nil {
				t.Fatalf("ledger Range/Inflate: %v", err)
			}
			var replyText, chunkText strings.Builder
			replyEntries, chunkEntries := 0, 0
			for _, e := range entries {
				if e.TaskID != taskID {
					continue
				}
				switch e.Kind {
				case ledger.KindAgentReply:
					replyEntries++
					for _, p := range e.Parts {
						replyText.WriteString(p.Text)
					}
				case ledger.KindReplyChunk:
					chunkEntries++
					for _, p := range e.Parts {
						chunkText.WriteString(p.Text)
					}
				}
			}
			if replyEntries != 1 || chunkEntries != chunks {
				t.Errorf("ledger holds %d AGENT_REPLY and %d REPLY_CHUNK entries, want 1 and %d (one per streamed chunk)", replyEntries, chunkEntries, chunks)
			}
			checkSameText(t, "ledger AGENT_REPLY", replyText.String(), want)
			checkSameText(t, "ledger REPLY_CHUNK concatenation", chunkText.String(), want)
			t.Logf("%d bytes streamed as %d chunks", len(want), chunks)
		})
	}
	if splits.Load() == 0 {
		t.Errorf("no piece boundary split a multi-byte character; the test lost its point")
	}
}

// ---- 2. resume from the middle of a stream ----

// flowAgent emits a numbered piece every 2 ms until stop is closed, then 20 more, so
// that events keep coming before, during and after a client's reconnect; it counts the
// pieces in emitted. It gives up at t's hang guard (a failed test never closes stop).
func flowAgent(t testing.TB, stop <-chan struct{}, emitted *atomic.Int64) scriptAgent {
	deadline := testutil.Deadline(t)
	return scriptAgent{reply: func(ctx context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
		after := -1
		for i := 0; after != 0; i++ {
			if after < 0 {
				select {
				case <-stop:
					after = 20
				default:
				}
				if time.Now().After(deadline) {
					return agent.Result{}, errors.New("flowAgent: never stopped")
				}
			}
			if after > 0 {
				after--
			}
			if err := emit(fmt.Sprintf("piece %04d ✓ ", i)); err != nil {
				return agent.Result{}, err
			}
			emitted.Add(1)
			if err := sleepCtx(ctx, 2*time.Millisecond); err != nil {
				return agent.Result{}, err
			}
		}
		return agent.Result{}, nil
	}}
}

// refReader is an uninterrupted conversations/subscribe reader of one context, opened
// before the send: the reference the resumed streams are compared with.
type refReader struct {
	last atomic.Uint64 // seq of the last event read
	done chan struct{}
	evs  []streamEvent // valid after done
	err  error
}

func startRefReader(t *testing.T, s *Server, contextID string) *refReader {
	t.Helper()
	ws := wsDial(t, s, "")
	before := s.runner.Streams()
	wsWrite(t, ws, "%s", subscribeFrame("ref", contextID, 0))
	waitUntil(t, "the reference subscription", func() bool { return s.runner.Streams() > before })
	r := &refReader{done: make(chan struct{})}
	go func() { // exits at the task's final status or when the socket fails (closed at cleanup)
		defer close(r.done)
		for {
			ev, err := wsReadEvent(ws, `"ref"`)
			if err != nil {
				r.err = err
				return
			}
			r.evs = append(r.evs, ev)
			r.last.Store(ev.Seq)
			if ev.final() {
				return
			}
		}
	}()
	return r
}

func (r *refReader) wait(t *testing.T) []streamEvent {
	t.Helper()
	testutil.Closed(t, r.done, "the reference reader to see the task end")
	if r.err != nil {
		t.Fatalf("reference reader: %v", r.err)
	}
	return r.evs
}

// TestStreamResume (W-3): a client that drops a stream in the middle and resumes from the
// last seq it saw (SSE Last-Event-ID on tasks/resubscribe or SubscribeToTask; WebSocket
// conversations/subscribe or SubscribeToTask with afterSeq), while the agent keeps
// producing, ends up with exactly what an uninterrupted reader received: same seqs, same
// order, no gap, no duplicate. Resuming after the task ended works the same way.
func TestStreamResume(t *testing.T) {
	tests := []struct {
		name      string
		transport string // "sse": SSE stream; "ws-sub": conversations/subscribe; "ws-task": SendStreamingMessage over the socket
		v1        bool   // SSE in the v1.0 dialect
		afterEnd  bool   // resume only once the task has ended
	}{
		{name: "SSE v0.3 message/stream then tasks/resubscribe", transport: "sse"},
		{name: "SSE v1.0 SendStreamingMessage then SubscribeToTask", transport: "sse", v1: true},
		{name: "SSE v0.3 tasks/resubscribe after the task ended", transport: "sse", afterEnd: true},
		{name: "websocket conversations/subscribe afterSeq", transport: "ws-sub"},
		{name: "websocket SendStreamingMessage then SubscribeToTask afterSeq", transport: "ws-task"},
		{name: "websocket conversations/subscribe after the task ended", transport: "ws-sub", afterEnd: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testutil.Context(t)
			stop := make(chan struct{})
			var stopOnce sync.Once
			stopAgent := func() { stopOnce.Do(func() { close(stop) }) }
			defer stopAgent()
			s := startWSServer(t, testConfig(t), WithAgent(flowAgent(t, stop, new(atomic.Int64))))
			c := newHTTPClient(t)
			const cid = "resume-ctx"
			ref := startRefReader(t, s, cid)
			sendMethod, resubMethod := "message/stream", "tasks/resubscribe"
			msg := fmt.Sprintf(`{"kind":"message","role":"user","messageId":"m-1","contextId":%q,"parts":[{"kind":"text","text":"go"}]}`, cid)
			if tt.v1 || tt.transport == "ws-task" {
				sendMethod, resubMethod = "SendStreamingMessage", "SubscribeToTask"
				msg = fmt.Sprintf(`{"role":"ROLE_USER","messageId":"m-1","contextId":%q,"parts":[{"text":"go"}]}`, cid)
			}

			// Read the beginning of the stream (at least 4 reply chunks), then drop it.
			var first, second []streamEvent
			artifacts := 0
			var next func() (streamEvent, error)
			var drop func()
			var sendDoneCh <-chan sendDone
			switch tt.transport {
			case "sse":
				r, err := sseOpen(ctx, c, s.URL(), "", tt.v1, "", fmt.Sprintf(`{"jsonrpc":"2.0","id":"s1","method":%q,"params":{"message":%s}}`, sendMethod, msg))
				if err != nil {
					t.Fatalf("%s: %v", sendMethod, err)
				}
				next, drop = r.next, r.close
			case "ws-sub":
				ws1 := wsDial(t, s, "")
				wsWrite(t, ws1, "%s", subscribeFrame("sub", cid, 0))
				waitUntil(t, "the second subscription", func() bool { return s.runner.Streams() == 2 })
				sendDoneCh = sendAsync(ctx, c, s.URL(), "", cid, "go")
				next = func() (streamEvent, error) { return wsReadEvent(ws1, `"sub"`) }
				drop = func() { ws1.Close() }
			case "ws-task":
				ws1 := wsDial(t, s, "")
				wsWrite(t, ws1, `{"jsonrpc":"2.0","id":"s1","method":%q,"params":{"message":%s}}`, sendMethod, msg)
				next = func() (streamEvent, error) { return wsReadEvent(ws1, `"s1"`) }
				drop = func() { ws1.Close() }
			}
			for artifacts < 4 {
				ev, err := next()
				if err != nil {
					t.Fatalf("first stream: after %d events: %v", len(first), err)
				}
				first = append(first, ev)
				if ev.Kind == "artifact" {
					artifacts++
				}
			}
			drop()
			lastSeen := first[len(first)-1].Seq
			taskID := first[0].TaskID
			// Events are committed while the client is away (they must come from the replay)…
			waitUntil(t, "events while disconnected", func() bool { return ref.last.Load() >= lastSeen+3 })
			if tt.afterEnd {
				stopAgent()
				ref.wait(t)
				waitUntil(t, "the turn to end", func() bool { return s.runner.Running() == 0 })
			}
			// …and, unless the task has ended, keep coming while it reconnects and after
			// (live): the agent stops only once three resumed events have arrived.
			atResume := ref.last.Load()
			onEvent := func(ev streamEvent) {
				second = append(second, ev)
				if len(second) == 3 {
					stopAgent()
				}
			}
			switch tt.transport {
			case "sse":
				r, err := sseOpen(ctx, c, s.URL(), "", tt.v1, strconv.FormatUint(lastSeen, 10), fmt.Sprintf(`{"jsonrpc":"2.0","id":"s2","method":%q,"params":{"id":%q}}`, resubMethod, taskID))
				if err != nil {
					t.Fatalf("%s: %v", resubMethod, err)
				}
				for {
					ev, err := r.next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatalf("%s: after %d events: %v", resubMethod, len(second), err)
					}
					onEvent(ev)
				}
				r.close()
			case "ws-sub", "ws-task":
				ws2 := wsDial(t, s, "")
				if tt.transport == "ws-sub" {
					wsWrite(t, ws2, "%s", subscribeFrame("s2", cid, lastSeen))
				} else {
					wsWrite(t, ws2, `{"jsonrpc":"2.0","id":"s2","method":%q,"params":{"id":%q,"afterSeq":%d}}`, resubMethod, taskID, lastSeen)
				}
				for {
					ev, err := wsReadEvent(ws2, `"s2"`)
					if err != nil {
						t.Fatalf("resumed stream: after %d events: %v", len(second), err)
					}
					onEvent(ev)
					if ev.final() {
						break
					}
				}
			}
			if sendDoneCh != nil {
				select {
				case d := <-sendDoneCh:
					if d.err != nil {
						t.Fatalf("message/send: %v", d.err)
					}
				case <-ctx.Done():
					t.Fatal("message/send did not return")
				}
			}
			want := ref.wait(t)
			got := append(append([]streamEvent(nil), first...), second...)
			if err := checkIncreasing(want); err != nil {
				t.Errorf("uninterrupted reader: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("resumed events (-uninterrupted +interrupted then resumed):\n%s", diff)
			}
			later := 0
			for _, ev := range second {
				if ev.Seq > atResume {
					later++
				}
			}
			if !tt.afterEnd && later == 0 {
				t.Errorf("no resumed event was committed after the resume started: the test did not race with live events")
			}
			t.Logf("%d events before the drop (last seq %d); %d resumed: %d committed while away, %d during the reconnect or after",
				len(first), lastSeen, len(second), len(second)-later, later)
		})
	}
}

// TestStreamResumeUnwatched: with nobody else watching, a dropped SSE stream leaves the
// reply unwatched (the gateway stores no chunks meanwhile); the resumed stream still gets
// the text produced while it was away, and drop plus resume equal a replay of the whole
// context from the ledger: append-only chunks that concatenate to the stored reply.
func TestStreamResumeUnwatched(t *testing.T) {
	ctx := testutil.Context(t)
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopAgent := func() { stopOnce.Do(func() { close(stop) }) }
	defer stopAgent()
	var emitted atomic.Int64
	s := startWSServer(t, testConfig(t), WithAgent(flowAgent(t, stop, &emitted)))
	c := newHTTPClient(t)
	const cid = "resume-alone"
	r, err := sseOpen(ctx, c, s.URL(), "", false, "", sendBody(true, cid, "go", "", ""))
	if err != nil {
		t.Fatalf("message/stream: %v", err)
	}
	var first []streamEvent
	for artifacts := 0; artifacts < 4; {
		ev, err := r.next()
		if err != nil {
			t.Fatalf("message/stream: after %d events: %v", len(first), err)
		}
		first = append(first, ev)
		if ev.Kind == "artifact" {
			artifacts++
		}
	}
	r.close()
	waitUntil(t, "the dropped stream to close", func() bool { return s.runner.Streams() == 0 })
	// The agent goes on producing, unwatched: 20 pieces the resumed stream must get.
	unwatched := emitted.Load()
	waitUntil(t, "20 pieces produced unwatched", func() bool { return emitted.Load() >= unwatched+20 })
	lastSeen := first[len(first)-1].Seq
	r, err = sseOpen(ctx, c, s.URL(), "", false, strconv.FormatUint(lastSeen, 10), fmt.Sprintf(`{"jsonrpc":"2.0","id":"s2","method":"tasks/resubscribe","params":{"id":%q}}`, first[0].TaskID))
	if err != nil {
		t.Fatalf("tasks/resubscribe: %v", err)
	}
	var second []streamEvent
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("tasks/resubscribe: after %d events: %v", len(second), err)
		}
		second = append(second, ev)
		if len(second) == 3 {
			stopAgent()
		}
	}
	r.close()
	// The whole context, replayed from the ledger once the turn is over.
	waitUntil(t, "the turn to end", func() bool { return s.runner.Running() == 0 })
	ws := wsDial(t, s, "")
	wsWrite(t, ws, "%s", subscribeFrame("replay", cid, 0))
	replay, err := wsCollect(ws, `"replay"`, finalOf(""))
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	got := append(append([]streamEvent(nil), first...), second...)
	if diff := cmp.Diff(replay, got); diff != "" {
		t.Errorf("dropped then resumed stream (-ledger replay +stream):\n%s", diff)
	}
	var want strings.Builder
	entries, err := s.ledger.Range(ctx, contextid.LocalOwner, cid, 0, 0)
	if err != nil {
		t.Fatalf("ledger Range: %v", err)
	}
	for _, e := range entries {
		if e.Kind == ledger.KindAgentReply {
			for _, p := range e.Parts {
				want.WriteString(p.Text)
			}
		}
	}
	checkReplyStream(t, "dropped then resumed stream", got, want.String())
	if !strings.Contains(want.String(), "piece 0000") || len(second) < 3 {
		t.Errorf("stored reply %.60q…, %d resumed events: want the whole reply and a resumed stream", want.String(), len(second))
	}
	biggest := 0
	for _, ev := range second {
		biggest = max(biggest, len(ev.Text))
	}
	t.Logf("%d events before the drop, %d after; the biggest resumed chunk (text produced while unwatched) holds %d bytes", len(first), len(second), biggest)
}

// ---- 3. slow consumer ----

// TestStreamSlowConsumer (W-4): through the gateway, a WebSocket subscriber that stops
// reading is disconnected with 1008 and a reason naming afterSeq=N once its send queue has
// been full for SlowAfter; resuming from N gives the rest with no gap; a second subscriber
// gets every event, and the stalled subscriber does not hold the turn up.
//
// It is built to need no wall clock: the agent emits one piece, then waits until the
// reading subscriber has received it as an event (so every piece is one frame of a known
// size, however slow commits are), and goes on until the stalled subscriber has been
// evicted, then emits a few more and ends. So it produces just what fills the stalled
// socket (~100 KB) and queue, and the turn can only finish if the stalled subscriber
// held nothing up: the reader's progress is what paces the agent. The only timeouts are
// hang guards derived from the test's deadline.
func TestStreamSlowConsumer(t *testing.T) {
	const (
		pieceSize = 8 << 10 // ~13 frames fill the stalled socket; then SendBuffer, then one waits SlowAfter
		maxPieces = 256     // 2 MiB: far beyond what the stalled socket and queue hold; reaching it is a failure
		after     = 3       // pieces emitted once the stalled subscriber is gone
		cid       = "ctx-slow"
	)
	piece := strings.Repeat("abcdefg ", pieceSize/8)
	var (
		s        *Server
		read     atomic.Int64 // artifact events the reading subscriber has received
		progress = make(chan struct{}, 1)
		evicted  atomic.Bool // the agent saw the stalled subscriber's stream end
		emitted  atomic.Int64
		agentErr atomic.Pointer[error] // why the agent gave up, if it did
	)
	guard := testutil.Deadline(t)
	ag := scriptAgent{reply: func(ctx context.Context, _ agent.Turn, emit agent.Emit) (_ agent.Result, err error) {
		defer func() {
			if err != nil {
				agentErr.Store(&err)
			}
		}()
		tm := time.NewTimer(time.Until(guard))
		defer tm.Stop()
		left := -1 // pieces still to emit once the stalled subscriber is gone
		for i := int64(1); left != 0; i++ {
			if i > maxPieces {
				return agent.Result{}, fmt.Errorf("the stalled subscriber was not evicted after %d pieces (%d KiB)", maxPieces, maxPieces*pieceSize>>10)
			}
			if err := emit(piece); err != nil {
				return agent.Result{}, err
			}
			emitted.Store(i)
			for read.Load() < i { // the reading subscriber has this piece: one piece, one frame
				select {
				case <-progress:
				case <-ctx.Done():
					return agent.Result{}, ctx.Err()
				case <-tm.C:
					return agent.Result{}, fmt.Errorf("the reading subscriber got %d of %d pieces: the stream is held up", read.Load(), i)
				}
			}
			if left < 0 && s.ws.Stats().Streams == 1 {
				evicted.Store(true)
				left = after
			}
			if left > 0 {
				left--
			}
		}
		return agent.Result{}, nil
	}}
	s = startWSServer(t, testConfig(t), WithAgent(ag), withStreaming(func(c *streaming.Config) {
		// The reading subscriber has at most one piece and the turn's first events in
		// flight: 8 frames never fill for it, even when its reader is descheduled.
		c.SendBuffer = 8
		c.SlowAfter = 200 * time.Millisecond
		// The close frame reaches the stalled client only once it reads again (after the
		// turn): its blocked write must outlive the turn, so the timeout is a hang guard.
		c.WriteTimeout = time.Until(guard)
	}))
	c := newHTTPClient(t)
	ctx := testutil.Context(t)

	slow := wsDial(t, s, "", smallRcvBuf)
	fast := wsDial(t, s, "")
	wsWrite(t, slow, "%s", subscribeFrame("slow", cid, 0))
	wsWrite(t, fast, "%s", subscribeFrame("fast", cid, 0))
	testutil.WaitFor(t, "both subscriptions", func() bool { return s.ws.Stats().Streams == 2 })

	type result struct {
		evs []streamEvent
		err error
	}
	fastDone := make(chan result, 1)
	go func() { // exits at the final status or when the socket fails (closed at cleanup)
		var r result
		for {
			ev, err := wsReadEvent(fast, `"fast"`)
			if err != nil {
				r.err = fmt.Errorf("after %d events: %w", len(r.evs), err)
				break
			}
			r.evs = append(r.evs, ev)
			if ev.Kind == "artifact" {
				read.Add(1)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
			if ev.final() {
				break
			}
		}
		fastDone <- r
	}()
	d := testutil.Receive(t, sendAsync(ctx, c, s.URL(), "", cid, "flood"), "message/send")
	if e := agentErr.Load(); e != nil {
		t.Fatalf("the agent gave up: %v", *e)
	}
	if d.err != nil {
		t.Fatalf("message/send: %v", d.err)
	}
	f := testutil.Receive(t, fastDone, "the reading subscriber's final status")
	if f.err != nil {
		t.Fatalf("reading subscriber: %v", f.err)
	}
	if err := checkIncreasing(f.evs); err != nil {
		t.Errorf("reading subscriber: %v", err)
	}
	if !evicted.Load() {
		t.Fatalf("the turn ended (%d pieces) before the stalled subscriber was evicted", emitted.Load())
	}

	// Now it reads: what was written to its socket, then the close frame naming the seq.
	var got []streamEvent
	var closeErr *websocket.CloseError
	for {
		ev, err := wsReadEvent(slow, `"slow"`)
		if err != nil {
			if !errors.As(err, &closeErr) {
				t.Fatalf("slow consumer: %v after %d events, want a close frame", err, len(got))
			}
			break
		}
		got = append(got, ev)
	}
	if len(got) == 0 || len(got) >= len(f.evs) {
		t.Fatalf("slow consumer read %d events before the close, want some but not all %d", len(got), len(f.evs))
	}
	last := got[len(got)-1].Seq
	wantReason := fmt.Sprintf("slow consumer: resume %s with afterSeq=%d", cid, last)
	if closeErr.Code != websocket.ClosePolicyViolation || closeErr.Text != wantReason {
		t.Errorf("close = %d %q, want %d %q", closeErr.Code, closeErr.Text, websocket.ClosePolicyViolation, wantReason)
	}

	// Resuming from the named seq yields the rest: together, exactly the reading one's.
	again := wsDial(t, s, "")
	n, _ := strconv.ParseUint(closeErr.Text[strings.LastIndexByte(closeErr.Text, '=')+1:], 10, 64)
	wsWrite(t, again, "%s", subscribeFrame("again", cid, n))
	rest, err := wsCollect(again, `"again"`, finalOf(""))
	if err != nil {
		t.Fatalf("resumed subscription: %v", err)
	}
	all := append(got, rest...)
	if diff := cmp.Diff(f.evs, all); diff != "" {
		t.Errorf("slow consumer's events, then resumed (-reading subscriber +slow then resumed):\n%.3000s", diff)
	}
	t.Logf("turn of %d events (%d pieces, %d KiB); the stalled subscriber read %d events and was evicted at afterSeq=%d; message/send returned after %v",
		len(f.evs), emitted.Load(), emitted.Load()*pieceSize>>10, len(got), last, d.took.Round(time.Millisecond))
}

// ---- 4. concurrent subscribers ----

// TestStreamConcurrentSubscribers: 8 WebSocket connections subscribed to one context,
// half before the first turn and half while it streams, see the same events of 3 turns
// in the same order.
func TestStreamConcurrentSubscribers(t *testing.T) {
	const (
		subscribers = 8
		turns       = 3
		cid         = "ctx-many"
	)
	p := piecer{maxPiece: 40, pauseEvery: 1, pause: time.Millisecond}
	ag := scriptAgent{reply: func(ctx context.Context, tn agent.Turn, emit agent.Emit) (agent.Result, error) {
		_, err := p.emit(ctx, emit, strings.Repeat("turn "+tn.Text+" — ünïcödé 🚀 ", 60), uint64(len(tn.Text)))
		return agent.Result{}, err
	}}
	s := startWSServer(t, testConfig(t), WithAgent(ag))
	c := newHTTPClient(t)
	ctx := testutil.Context(t)

	type result struct {
		evs []streamEvent
		err error
	}
	results := make([]chan result, subscribers)
	subscribe := func(i int) {
		ws := wsDial(t, s, "")
		wsWrite(t, ws, "%s", subscribeFrame(fmt.Sprint("sub-", i), cid, 0))
		results[i] = make(chan result, 1)
		go func() { // exits after the last turn's final status or when the socket fails
			var out []streamEvent
			for done := 0; done < turns; {
				ev, err := wsReadEvent(ws, fmt.Sprintf(`"sub-%d"`, i))
				if err != nil {
					results[i] <- result{out, err}
					return
				}
				out = append(out, ev)
				if ev.final() {
					done++
				}
			}
			results[i] <- result{out, nil}
		}()
	}
	for i := range subscribers / 2 {
		subscribe(i)
	}
	waitUntil(t, "the first subscriptions", func() bool { return s.runner.Streams() == subscribers/2 })
	sent := make(chan error, 1)
	go func() { // exits after the last turn (each send is bounded by ctx)
		for i := range turns {
			if d := <-sendAsync(ctx, c, s.URL(), "", cid, fmt.Sprint(i)); d.err != nil {
				sent <- fmt.Errorf("turn %d: %w", i, d.err)
				return
			}
		}
		sent <- nil
	}()
	waitUntil(t, "the first turn to stream", func() bool { return s.runner.Running() > 0 })
	for i := subscribers / 2; i < subscribers; i++ {
		subscribe(i) // racing with the first turn's live events: replay, then live
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	var first []streamEvent
	for i := range subscribers {
		var r result
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			t.Fatalf("subscriber %d did not see %d turns end", i, turns)
		}
		if r.err != nil {
			t.Fatalf("subscriber %d: %v", i, r.err)
		}
		if i == 0 {
			first = r.evs
			if err := checkIncreasing(first); err != nil {
				t.Errorf("subscriber 0: %v", err)
			}
			if len(first) == 0 || first[0].Seq != 1 {
				t.Errorf("subscriber 0 starts at %v, want seq 1", seqs(first))
			}
			continue
		}
		if diff := cmp.Diff(first, r.evs); diff != "" {
			t.Errorf("subscriber %d's events differ from subscriber 0's (-0 +%d):\n%.3000s", i, i, diff)
		}
	}
	t.Logf("%d subscribers each saw the same %d events of %d turns", subscribers, len(first), turns)
}

// ---- 5. authentication ----

// TestStreamAuth: GET /ws takes the same bearer tokens as the HTTP routes, checked at the
// upgrade; a peer's subscription sees its own conversation only, whatever the frames
// claim.
func TestStreamAuth(t *testing.T) {
	s := startWSServer(t, peersConfig(t))
	c := newHTTPClient(t)
	ctx := testutil.Context(t)

	refused := []struct {
		name   string
		header http.Header
		query  string
	}{
		{name: "no token"},
		{name: "wrong token", header: http.Header{"Authorization": {"Bearer not-a-configured-token-at-all"}}},
		{name: "basic scheme", header: http.Header{"Authorization": {"Basic " + tokAlice}}},
		{name: "token in the query", query: "?access_token=" + tokAlice + "&token=" + tokAlice},
		{name: "token as a subprotocol", header: http.Header{"Sec-WebSocket-Protocol": {"bearer." + tokAlice}}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			ws, resp, err := d.DialContext(ctx, wsURLOf(s)+tt.query, tt.header)
			if err == nil {
				ws.Close()
				t.Fatal("Dial() succeeded, want 401 at the upgrade")
			}
			if resp == nil {
				t.Fatalf("Dial() error = %v without an HTTP response, want 401", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("upgrade status = %d, want 401", resp.StatusCode)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="a2a-gateway"` {
				t.Errorf("WWW-Authenticate = %q, want the Bearer challenge", got)
			}
		})
	}

	// Alice and bob subscribe to "shared". Bob's first subscription frame claims to be
	// alice's: naming another peer ("peer") is refused with -32602 (only the console's
	// operator may), and a token in the frame params changes nothing; his plain
	// subscription then sees his own conversation only.
	alice := wsDial(t, s, tokAlice)
	wsWrite(t, alice, "%s", subscribeFrame("a", "shared", 0))
	bob := wsDial(t, s, tokBob)
	wsWrite(t, bob, `{"jsonrpc":"2.0","id":"claim","method":"conversations/subscribe","params":{"contextId":"shared","afterSeq":0,"peer":"alice","owner":"alice","authorization":"Bearer %s","token":%q}}`, tokAlice, tokAlice)
	if f, err := wsReadFrame(bob); err != nil || f.Error == nil || f.Error.Code != -32602 || string(f.ID) != `"claim"` {
		t.Fatalf("bob's subscription naming peer alice = %+v, %v; want a -32602 error frame", f, err)
	}
	wsWrite(t, bob, `{"jsonrpc":"2.0","id":"b","method":"conversations/subscribe","params":{"contextId":"shared","afterSeq":0,"owner":"alice","authorization":"Bearer %s","token":%q}}`, tokAlice, tokAlice)
	waitUntil(t, "both subscriptions", func() bool { return s.runner.Streams() == 2 })

	// Bob's turn first, then alice's, on the same contextId.
	for _, p := range []struct{ token, text string }{{tokBob, "bravo"}, {tokAlice, "alpha"}} {
		if d := <-sendAsync(ctx, c, s.URL(), p.token, "shared", p.text); d.err != nil {
			t.Fatalf("send %s: %v", p.text, d.err)
		}
	}
	taskText := func(evs []streamEvent) string {
		var b strings.Builder
		for _, ev := range evs {
			b.WriteString(ev.Text)
		}
		return b.String()
	}
	aliceEvs, err := wsCollect(alice, `"a"`, finalOf(""))
	if err != nil {
		t.Fatalf("alice's subscription: %v", err)
	}
	if got := taskText(aliceEvs); got != "echo: alpha" {
		t.Errorf("alice's subscription's first task replied %q, want %q: bob's conversation leaked into alice's", got, "echo: alpha")
	}
	if id := aliceEvs[0].TaskID; len(taskEvents(aliceEvs, id)) != len(aliceEvs) {
		t.Errorf("alice's subscription mixes tasks: %+v", aliceEvs)
	}
	bobEvs, err := wsCollect(bob, `"b"`, finalOf(""))
	if err != nil {
		t.Fatalf("bob's subscription: %v", err)
	}
	if got := taskText(bobEvs); got != "echo: bravo" {
		t.Errorf("bob's subscription (claiming alice in its params) saw the reply %q, want %q", got, "echo: bravo")
	}
	// Nothing more arrives on either: the other peer's turn was never theirs.
	for _, w := range []struct {
		name string
		ws   *websocket.Conn
	}{{"alice", alice}, {"bob", bob}} {
		_ = w.ws.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, b, err := w.ws.ReadMessage(); err == nil {
			t.Errorf("%s's subscription got another frame: %.200s", w.name, b)
		}
	}
	if got := owners(t, c, s, "shared"); len(got) != 2 || got[0] != "alice" || got[1] != "bob" {
		t.Errorf("owners of shared = %v, want [alice bob]", got)
	}
}
