// Command a2agoecho is the a2a-go peer of `make bench` (issue #16 item 4): an
// in-memory echo agent built on github.com/a2aproject/a2a-go v0.3.3's own server
// (a2asrv), so that scripts/bench.sh can put the gateway next to the reference Go SDK
// on the same machine, in the same run, with the same load generator.
//
// It is a benchmark tool only: it is not part of the gateway binary, is not shipped
// or installed, and keeps everything in memory (a2a-go's default in-memory task
// store and event queues). Its executor answers every message with one agent
// Message whose text is "echo: " followed by the text parts of the request, like the
// gateway's echo agent, but nothing is stored durably.
//
// a2a-go v0.3.3 speaks the A2A v0.3 JSON-RPC binding only: it answers message/send and
// message/stream; v1.0's SendMessage gets -32601 (method not found).
//
// Usage:
//
//	a2agoecho --addr 127.0.0.1:9911
//
// POST / is the JSON-RPC endpoint, GET /readyz answers 200 once it listens, and the agent
// card is at /.well-known/agent-card.json. It stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9911", "listen on `HOST:PORT`")
	modelURL := flag.String("model-url", "", "stream each reply from the OpenAI-compatible model at `URL` (API base, e.g.\n"+
		"http://127.0.0.1:4001/v1) as artifact updates instead of echoing: make bench-llm's peer")
	flag.Parse()
	if *modelURL != "" {
		executor = modelExecutor{url: *modelURL, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 10000}}}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "a2agoecho:", err)
		os.Exit(1)
	}
}

// run serves the echo agent on addr until ctx ends. It returns the listen error, or
// nil after a shutdown.
func run(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           newHandler("http://" + ln.Addr().String() + "/"),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.DiscardHandler, slog.LevelError),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }() // ends when Shutdown closes ln
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newHandler returns the HTTP handler of an echo agent whose card names url: a2a-go's
// JSON-RPC handler at /, its static card handler, and /readyz.
func newHandler(url string) http.Handler {
	card := &a2a.AgentCard{
		Name:               "a2a-go echo (bench peer)",
		Description:        "Echoes the text of each message; in memory; for `make bench` only",
		URL:                url,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion:    "0.3.0",
		DefaultInputModes:  []string{"text"},
		DefaultOutputModes: []string{"text"},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes the text", Tags: []string{"echo"}}},
	}
	// Warnings only: a2a-go logs at info level per request otherwise, which a bench
	// would measure too.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rh := a2asrv.NewHandler(executor, a2asrv.WithLogger(logger))
	mux := http.NewServeMux()
	mux.Handle("POST /", a2asrv.NewJSONRPCHandler(rh))
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return mux
}

// executor answers: the echo, or with --model-url the model's stream (model.go).
var executor a2asrv.AgentExecutor = echoExecutor{}

// echoExecutor answers each message with an agent Message echoing its text.
type echoExecutor struct{}

// Execute writes the echo of reqCtx.Message to q; it returns q's write error.
func (echoExecutor) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	var b strings.Builder
	b.WriteString("echo: ")
	if reqCtx.Message != nil {
		for _, p := range reqCtx.Message.Parts {
			if tp, ok := p.(a2a.TextPart); ok {
				b.WriteString(tp.Text)
			}
		}
	}
	return q.Write(ctx, a2a.NewMessageForTask(a2a.MessageRoleAgent, reqCtx, a2a.TextPart{Text: b.String()}))
}

// Cancel has nothing to cancel: Execute finishes at once.
func (echoExecutor) Cancel(context.Context, *a2asrv.RequestContext, eventqueue.Queue) error {
	return nil
}
