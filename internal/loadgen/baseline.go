package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// baselineShutdownTimeout bounds how long stopping the baseline waits for
// in-flight requests before closing their connections.
const baselineShutdownTimeout = 5 * time.Second

// maxBaselineBody caps the request body the baseline reads.
const maxBaselineBody = 4 << 20

// StartBaseline starts a bare net/http JSON-RPC echo server on
// 127.0.0.1:0 and returns its URL ("http://127.0.0.1:<port>/") and a stop
// function. The server is the reference [Compare] divides by: it decodes
// and validates each request and answers message/send and SendMessage with
// a completed task whose artifact echoes the text, and message/stream and
// SendStreamingMessage with an SSE stream of the task, an artifact-update
// and a final status-update, each in the dialect of the method.
//
// stop shuts the server down and waits for it; it may be called more than
// once, and is also run when ctx ends. Call it in every case. StartBaseline
// returns an error only if it cannot listen.
func StartBaseline(ctx context.Context) (url string, stop func(), err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("baseline listen: %w", err)
	}
	srv := &http.Server{
		Handler:           &baselineHandler{},
		ReadHeaderTimeout: 10 * time.Second,
		// Broken client connections are routine under load; don't print them.
		ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError),
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) }) // exits when shutdown closes ln
	var once sync.Once
	shutdown := func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), baselineShutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
			wg.Wait()
		})
	}
	unregister := context.AfterFunc(ctx, shutdown) // runs shutdown in its own goroutine, which then exits
	stop = func() {
		unregister()
		shutdown() // waits for a shutdown already started by ctx
	}
	return "http://" + ln.Addr().String() + "/", stop, nil
}

// baselineHandler is the echo endpoint. Its only state is a task counter.
type baselineHandler struct {
	tasks atomic.Uint64
}

// baselineRequest is the JSON-RPC request, decoded as far as the echo needs.
type baselineRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *struct {
		Message *baselineMessage `json:"message"`
	} `json:"params"`
}

// baselineMessage is the request's message, in either dialect.
type baselineMessage struct {
	MessageID string `json:"messageId"`
	ContextID string `json:"contextId"`
	Role      string `json:"role"`
	Parts     []struct {
		Kind string  `json:"kind"`
		Text *string `json:"text"`
	} `json:"parts"`
}

// baselineResponse is a JSON-RPC response envelope.
type baselineResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *baselineError  `json:"error,omitempty"`
}

type baselineError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// v0.3 result objects.
type (
	v03Part struct {
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	v03Status struct {
		State     string `json:"state"`
		Timestamp string `json:"timestamp"`
	}
	v03Artifact struct {
		ArtifactID string    `json:"artifactId"`
		Parts      []v03Part `json:"parts"`
	}
	v03Task struct {
		Kind      string        `json:"kind"`
		ID        string        `json:"id"`
		ContextID string        `json:"contextId"`
		Status    v03Status     `json:"status"`
		Artifacts []v03Artifact `json:"artifacts,omitempty"`
	}
	v03ArtifactUpdate struct {
		Kind      string      `json:"kind"`
		TaskID    string      `json:"taskId"`
		ContextID string      `json:"contextId"`
		Artifact  v03Artifact `json:"artifact"`
		Append    bool        `json:"append"`
		LastChunk bool        `json:"lastChunk"`
	}
	v03StatusUpdate struct {
		Kind      string    `json:"kind"`
		TaskID    string    `json:"taskId"`
		ContextID string    `json:"contextId"`
		Status    v03Status `json:"status"`
		Final     bool      `json:"final"`
	}
)

// v1.0 result objects and the StreamResponse / SendMessageResponse oneof.
type (
	v10Part struct {
		Text string `json:"text"`
	}
	v10Status struct {
		State     string `json:"state"`
		Timestamp string `json:"timestamp"`
	}
	v10Artifact struct {
		ArtifactID string    `json:"artifactId"`
		Parts      []v10Part `json:"parts"`
	}
	v10Task struct {
		ID        string        `json:"id"`
		ContextID string        `json:"contextId"`
		Status    v10Status     `json:"status"`
		Artifacts []v10Artifact `json:"artifacts,omitempty"`
	}
	v10ArtifactUpdate struct {
		TaskID    string      `json:"taskId"`
		ContextID string      `json:"contextId"`
		Artifact  v10Artifact `json:"artifact"`
		Append    bool        `json:"append"`
		LastChunk bool        `json:"lastChunk"`
	}
	v10StatusUpdate struct {
		TaskID    string    `json:"taskId"`
		ContextID string    `json:"contextId"`
		Status    v10Status `json:"status"`
	}
	v10StreamResponse struct {
		Task           *v10Task           `json:"task,omitempty"`
		ArtifactUpdate *v10ArtifactUpdate `json:"artifactUpdate,omitempty"`
		StatusUpdate   *v10StatusUpdate   `json:"statusUpdate,omitempty"`
	}
)

func (h *baselineHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/message:send") {
		h.serveHTTPJSON(w, r)
		return
	}
	req, ok := decodeBaselineRequest(w, r)
	if !ok {
		return
	}
	v10, stream, rpcErr := checkBaselineRequest(req)
	if rpcErr != nil {
		writeJSON(w, baselineResponse{ID: req.ID, Error: rpcErr})
		return
	}
	e := h.newEcho(req.Params.Message)
	switch {
	case !stream && !v10:
		writeJSON(w, baselineResponse{ID: req.ID, Result: e.v03Task()})
	case !stream && v10:
		writeJSON(w, baselineResponse{ID: req.ID, Result: e.v10Task()})
	case stream && !v10:
		writeSSE(w, req.ID, e.v03Events()...)
	default:
		writeSSE(w, req.ID, e.v10Events()...)
	}
}

// serveHTTPJSON is the echo of the HTTP+JSON binding: POST /message:send with a
// SendMessageRequest body, answered with the completed task (a SendMessageResponse), or
// 400 for a request without a message.
func (h *baselineHandler) serveHTTPJSON(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Message *baselineMessage `json:"message"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBaselineBody)).Decode(&req) != nil ||
		req.Message == nil || req.Message.MessageID == "" || len(req.Message.Parts) == 0 {
		http.Error(w, `{"error":{"code":400,"status":"INVALID_ARGUMENT"}}`, http.StatusBadRequest)
		return
	}
	b, err := json.Marshal(h.newEcho(req.Message).v10Task())
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// decodeBaselineRequest reads a POSTed JSON-RPC request; when it cannot (another method,
// malformed JSON) it has answered already and returns false. A missing id becomes null.
func decodeBaselineRequest(w http.ResponseWriter, r *http.Request) (baselineRequest, bool) {
	var req baselineRequest
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return req, false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBaselineBody)).Decode(&req); err != nil {
		writeJSON(w, baselineResponse{ID: json.RawMessage("null"), Error: &baselineError{-32700, "Invalid JSON payload"}})
		return req, false
	}
	if len(req.ID) == 0 {
		req.ID = json.RawMessage("null")
	}
	return req, true
}

// checkBaselineRequest validates the envelope, the method (its dialect and whether it
// streams) and the message, the way the gateway does; a non-nil error is the answer.
func checkBaselineRequest(req baselineRequest) (v10, stream bool, _ *baselineError) {
	if req.JSONRPC != "2.0" {
		return false, false, &baselineError{-32600, "Request payload validation error"}
	}
	switch req.Method {
	case "message/send":
	case "message/stream":
		stream = true
	case "SendMessage":
		v10 = true
	case "SendStreamingMessage":
		v10, stream = true, true
	default:
		return false, false, &baselineError{-32601, "Method not found"}
	}
	if req.Params == nil || req.Params.Message == nil || req.Params.Message.MessageID == "" || len(req.Params.Message.Parts) == 0 {
		return false, false, &baselineError{-32602, "Invalid parameters"}
	}
	return v10, stream, nil
}

// baselineEcho is one completed echo task: the message's text parts, joined.
type baselineEcho struct {
	taskID, ctxID, now, text string
}

// newEcho numbers a new task for msg (and a contextId when msg has none).
func (h *baselineHandler) newEcho(msg *baselineMessage) baselineEcho {
	var text strings.Builder
	for _, p := range msg.Parts {
		if p.Text != nil && (p.Kind == "" || p.Kind == "text") {
			text.WriteString(*p.Text)
		}
	}
	n := h.tasks.Add(1)
	e := baselineEcho{taskID: "task-" + strconv.FormatUint(n, 10), ctxID: msg.ContextID,
		now: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), text: text.String()}
	if e.ctxID == "" {
		e.ctxID = "ctx-" + strconv.FormatUint(n, 10)
	}
	return e
}

func (e baselineEcho) v03Task() v03Task {
	return v03Task{
		Kind: "task", ID: e.taskID, ContextID: e.ctxID,
		Status:    v03Status{State: "completed", Timestamp: e.now},
		Artifacts: []v03Artifact{{ArtifactID: "echo", Parts: []v03Part{{Kind: "text", Text: e.text}}}},
	}
}

func (e baselineEcho) v10Task() v10StreamResponse {
	return v10StreamResponse{Task: &v10Task{
		ID: e.taskID, ContextID: e.ctxID,
		Status:    v10Status{State: "TASK_STATE_COMPLETED", Timestamp: e.now},
		Artifacts: []v10Artifact{{ArtifactID: "echo", Parts: []v10Part{{Text: e.text}}}},
	}}
}

// v03Events are the stream of a v0.3 message/stream: the submitted task, the whole
// reply as one artifact update, the final status.
func (e baselineEcho) v03Events() []any {
	return []any{
		v03Task{Kind: "task", ID: e.taskID, ContextID: e.ctxID, Status: v03Status{State: "submitted", Timestamp: e.now}},
		v03ArtifactUpdate{Kind: "artifact-update", TaskID: e.taskID, ContextID: e.ctxID, LastChunk: true,
			Artifact: v03Artifact{ArtifactID: "echo", Parts: []v03Part{{Kind: "text", Text: e.text}}}},
		v03StatusUpdate{Kind: "status-update", TaskID: e.taskID, ContextID: e.ctxID, Final: true,
			Status: v03Status{State: "completed", Timestamp: e.now}},
	}
}

// v10Events are the same stream in the v1.0 dialect (SendStreamingMessage).
func (e baselineEcho) v10Events() []any {
	return []any{
		v10StreamResponse{Task: &v10Task{ID: e.taskID, ContextID: e.ctxID,
			Status: v10Status{State: "TASK_STATE_SUBMITTED", Timestamp: e.now}}},
		v10StreamResponse{ArtifactUpdate: &v10ArtifactUpdate{TaskID: e.taskID, ContextID: e.ctxID, LastChunk: true,
			Artifact: v10Artifact{ArtifactID: "echo", Parts: []v10Part{{Text: e.text}}}}},
		v10StreamResponse{StatusUpdate: &v10StatusUpdate{TaskID: e.taskID, ContextID: e.ctxID,
			Status: v10Status{State: "TASK_STATE_COMPLETED", Timestamp: e.now}}},
	}
}

// writeJSON writes resp as an application/json answer with status 200.
func writeJSON(w http.ResponseWriter, resp baselineResponse) {
	resp.JSONRPC = "2.0"
	b, err := json.Marshal(resp)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// writeSSE writes one "data: <response>\n\n" frame per result, flushing
// after each, and returns when the client goes away or all are written.
func writeSSE(w http.ResponseWriter, id json.RawMessage, results ...any) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 2048)
	for _, res := range results {
		b, err := json.Marshal(baselineResponse{JSONRPC: "2.0", ID: id, Result: res})
		if err != nil {
			return
		}
		buf = append(append(append(buf[:0], "data: "...), b...), "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
