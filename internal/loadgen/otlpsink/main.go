// Command otlpsink is the local OTLP/HTTP receiver make bench exports spans to when it
// measures tracing's cost: it accepts POST /v1/traces (application/x-protobuf, gzip or
// not), decodes each request as a collector would, counts the spans and drops them.
// GET /stats answers "requests N spans N rejected N". A bench tool, not shipped.
package main

import (
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync/atomic"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

type sink struct{ requests, spans, rejected atomic.Int64 }

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "listen address")
	flag.Parse()
	s := &sink{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", s.traces)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "requests %d spans %d rejected %d\n", s.requests.Load(), s.spans.Load(), s.rejected.Load())
	})
	log.Fatal(http.ListenAndServe(*addr, mux))
}

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
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &msg)
	}
	if err != nil {
		s.reject(w, err)
		return
	}
	n := 0
	for _, rs := range msg.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	s.requests.Add(1)
	s.spans.Add(int64(n))
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *sink) reject(w http.ResponseWriter, err error) {
	s.rejected.Add(1)
	http.Error(w, err.Error(), http.StatusBadRequest)
}
