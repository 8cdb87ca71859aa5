package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/a2a-gateway/gateway/internal/telemetry"
	"github.com/a2a-gateway/gateway/internal/tracing"
)

// flushTimeout bounds the flush of the spans still queued when a command ends.
const flushTimeout = 5 * time.Second

// setupTracing builds the tracer provider the OTEL_* variables describe (see
// internal/telemetry) and returns it with flush, which sends the spans still queued
// (bounded by flushTimeout); call flush once, when the command is done.
func setupTracing(ctx context.Context, lookupEnv func(string) (string, bool)) (telemetry.Tracing, func(), error) {
	getenv := func(k string) string { v, _ := lookupEnv(k); return v }
	tel, err := telemetry.Setup(ctx, getenv)
	if err != nil {
		return tel, func() {}, err
	}
	flush := func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		_ = tel.Shutdown(fctx) // spans not sent by then are lost: nothing else to do
	}
	return tel, flush, nil
}

// serveTracing is setupTracing for `gateway serve`: what it built is logged.
func serveTracing(ctx context.Context, lookupEnv func(string) (string, bool), log *slog.Logger) (telemetry.Tracing, func(), error) {
	tel, flush, err := setupTracing(ctx, lookupEnv)
	if err != nil {
		return tel, flush, fmt.Errorf("tracing: %w", err)
	}
	tel.LogStart(ctx, log)
	return tel, flush, nil
}

// sendTracing starts `gateway send`'s root span ("gateway send"; under $TRACEPARENT
// when the environment carries one, as an exec agent's does), so that the send starts
// a trace the peer continues. An OTEL_* mistake is a warning on stderr: the send goes
// on untraced. end ends the span and flushes.
func sendTracing(ctx context.Context, lookupEnv func(string) (string, bool), stderr io.Writer) (context.Context, telemetry.Tracing, func()) {
	tel, flush, err := setupTracing(ctx, lookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "gateway: warning: tracing off: %v\n", err)
		return ctx, tel, flush
	}
	carrier := map[string]string{}
	for k, env := range map[string]string{"traceparent": "TRACEPARENT", "tracestate": "TRACESTATE"} {
		if v, ok := lookupEnv(env); ok {
			carrier[k] = v
		}
	}
	ctx, span := tracing.Tracer(tel.Provider).Start(tracing.ExtractMap(ctx, carrier), "gateway send")
	return ctx, tel, func() {
		span.End()
		flush()
	}
}
