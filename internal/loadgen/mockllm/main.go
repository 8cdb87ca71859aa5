// Command mockllm is the model of `make bench-llm` (issue #40 item 4): an
// OpenAI-compatible Chat Completions endpoint (loadgen.MockModel) at
// http://ADDR/v1/chat/completions that streams --tokens tokens at --rate per second to
// every request, each token stamped with the time it was written. A bench tool, not
// shipped.
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/a2a-gateway/gateway/internal/loadgen"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4001", "listen on `HOST:PORT`")
	rate := flag.Float64("rate", 30, "tokens per second")
	tokens := flag.Int("tokens", 300, "tokens per reply")
	flag.Parse()
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat/completions", loadgen.MockModel{Rate: *rate, Tokens: *tokens})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
