// Command otlpsink is the local OTLP/HTTP receiver make bench exports spans to when it
// measures tracing's cost: it accepts POST /v1/traces (application/x-protobuf, gzip or
// not), reads every request through to its spans and drops them. GET /stats answers
// "requests N spans N rejected N". A bench tool, not shipped.
//
// It shares the machine with the gateway it measures, so it costs as little as a
// receiver can: it walks the protobuf wire format (countSpans: every field of the
// request, its resource spans, scope spans and spans is parsed, each span must carry a
// 16-byte trace id and an 8-byte span id) without building the messages a collector
// would go on to process. A request that does not parse is rejected (400) and counted.
package main

import (
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync/atomic"
)

type sink struct{ requests, spans, rejected atomic.Int64 }

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "listen address")
	flag.Parse()
	log.Fatal(http.ListenAndServe(*addr, newSink().mux()))
}

func newSink() *sink { return &sink{} }

func (s *sink) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", s.traces)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "requests %d spans %d rejected %d\n", s.requests.Load(), s.spans.Load(), s.rejected.Load())
	})
	return mux
}

// emptyResponse is an ExportTraceServiceResponse with no partial_success: zero bytes.
var emptyResponse = []byte{}

func (s *sink) traces(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			s.reject(w, err)
			return
		}
		defer zr.Close()
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	n := 0
	if err == nil {
		n, err = countSpans(raw)
	}
	if err != nil {
		s.reject(w, err)
		return
	}
	s.requests.Add(1)
	s.spans.Add(int64(n))
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(emptyResponse)
}

func (s *sink) reject(w http.ResponseWriter, err error) {
	s.rejected.Add(1)
	http.Error(w, err.Error(), http.StatusBadRequest)
}
