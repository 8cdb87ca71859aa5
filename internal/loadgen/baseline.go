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
		Message *struct {
			MessageID string `json:"messageId"`
			ContextID string `json:"contextId"`
			Role      string `json:"role"`
			Parts     []struct {
				Kind string  `json:"kind"`
				Text *string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	} `json:"params"`
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
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var req baselineRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBaselineBody)).Decode(&req); err != nil {
		writeJSON(w, baselineResponse{ID: json.RawMessage("null"), Error: &baselineError{-32700, "Invalid JSON payload"}})
		return
	}
	if len(req.ID) == 0 {
		req.ID = json.RawMessage("null")
	}
	fail := func(code int, msg string) {
		writeJSON(w, baselineResponse{ID: req.ID, Error: &baselineError{code, msg}})
	}
	if req.JSONRPC != "2.0" {
		fail(-32600, "Request payload validation error")
		return
	}
	var v10, stream bool
	switch req.Method {
	case "message/send":
	case "message/stream":
		stream = true
	case "SendMessage":
		v10 = true
	case "SendStreamingMessage":
		v10, stream = true, true
	default:
		fail(-32601, "Method not found")
		return
	}
	if req.Params == nil || req.Params.Message == nil || req.Params.Message.MessageID == "" || len(req.Params.Message.Parts) == 0 {
		fail(-32602, "Invalid parameters")
		return
	}
	msg := req.Params.Message
	var text strings.Builder
	for _, p := range msg.Parts {
		if p.Text != nil && (p.Kind == "" || p.Kind == "text") {
			text.WriteString(*p.Text)
		}
	}
	n := h.tasks.Add(1)
	taskID := "task-" + strconv.FormatUint(n, 10)
	ctxID := msg.ContextID
	if ctxID == "" {
		ctxID = "ctx-" + strconv.FormatUint(n, 10)
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	echo := text.String()

	switch {
	case !stream && !v10:
		writeJSON(w, baselineResponse{ID: req.ID, Result: v03Task{
			Kind: "task", ID: taskID, ContextID: ctxID,
			Status:    v03Status{State: "completed", Timestamp: now},
			Artifacts: []v03Artifact{{ArtifactID: "echo", Parts: []v03Part{{Kind: "text", Text: echo}}}},
		}})
	case !stream && v10:
		writeJSON(w, baselineResponse{ID: req.ID, Result: v10StreamResponse{Task: &v10Task{
			ID: taskID, ContextID: ctxID,
			Status:    v10Status{State: "TASK_STATE_COMPLETED", Timestamp: now},
			Artifacts: []v10Artifact{{ArtifactID: "echo", Parts: []v10Part{{Text: echo}}}},
		}}})
	case stream && !v10:
		writeSSE(w, req.ID,
			v03Task{Kind: "task", ID: taskID, ContextID: ctxID, Status: v03Status{State: "submitted", Timestamp: now}},
			v03ArtifactUpdate{Kind: "artifact-update", TaskID: taskID, ContextID: ctxID, LastChunk: true,
				Artifact: v03Artifact{ArtifactID: "echo", Parts: []v03Part{{Kind: "text", Text: echo}}}},
			v03StatusUpdate{Kind: "status-update", TaskID: taskID, ContextID: ctxID, Final: true,
				Status: v03Status{State: "completed", Timestamp: now}},
		)
	default:
		writeSSE(w, req.ID,
			v10StreamResponse{Task: &v10Task{ID: taskID, ContextID: ctxID,
				Status: v10Status{State: "TASK_STATE_SUBMITTED", Timestamp: now}}},
			v10StreamResponse{ArtifactUpdate: &v10ArtifactUpdate{TaskID: taskID, ContextID: ctxID, LastChunk: true,
				Artifact: v10Artifact{ArtifactID: "echo", Parts: []v10Part{{Text: echo}}}}},
			v10StreamResponse{StatusUpdate: &v10StatusUpdate{TaskID: taskID, ContextID: ctxID,
				Status: v10Status{State: "TASK_STATE_COMPLETED", Timestamp: now}}},
		)
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
