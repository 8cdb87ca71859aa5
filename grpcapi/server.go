package grpcapi

import (
	"context"
	"log/slog"
	"net"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/grpcapi/a2apb"
)

// Config configures [New]. Dispatcher is required.
type Config struct {
	// Dispatcher serves the calls: the one the JSON-RPC endpoint's code path uses, over
	// the same Handler (its ExtendedCard answers GetExtendedAgentCard; its Observe counts
	// the calls by method).
	Dispatcher *a2a.Dispatcher
	// Authenticate gives a call its caller: from the metadata authorization (the whole
	// value, "" when absent) and the remote address, the ctx naming the peer
	// (turn.WithPeer), or [ErrUnauthenticated] / a [*ThrottledError]. nil: every call is
	// refused UNAUTHENTICATED (a caller must be named; see package turn).
	Authenticate func(ctx context.Context, authorization, remote string) (context.Context, error)
	// Logger is the request logger's base (package internal/logctx); nil: slog.Default().
	Logger *slog.Logger
	// TracerProvider makes a server span per call; nil: none (a caller's traceparent is
	// still passed on).
	TracerProvider trace.TracerProvider
	// MaxRecvBytes bounds a request message; 0: a2a.DefaultMaxBodyBytes, the HTTP
	// body limit.
	MaxRecvBytes int
}

// Server is the gRPC server of the binding.
type Server struct {
	g *grpc.Server
}

// New returns the gRPC server serving the A2AService of cfg.Dispatcher.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxRecvBytes <= 0 {
		cfg.MaxRecvBytes = a2a.DefaultMaxBodyBytes
	}
	e := &edge{cfg: cfg, log: cfg.Logger.With("component", "grpc")}
	g := grpc.NewServer(
		grpc.MaxRecvMsgSize(cfg.MaxRecvBytes),
		grpc.ChainUnaryInterceptor(e.unary),
		grpc.ChainStreamInterceptor(e.stream),
	)
	a2apb.RegisterA2AServiceServer(g, &service{d: cfg.Dispatcher})
	return &Server{g: g}
}

// Serve serves on ln until [Server.Stop] or [Server.GracefulStop]; it returns nil then.
func (s *Server) Serve(ln net.Listener) error {
	err := s.g.Serve(ln)
	if err == grpc.ErrServerStopped {
		return nil
	}
	return err
}

// GracefulStop stops taking calls and waits for the running ones until ctx is done, then
// cuts them off (Stop). It returns ctx.Err() when it had to cut calls off.
func (s *Server) GracefulStop(ctx context.Context) error {
	done := make(chan struct{})
	go func() { // exits when the running calls have ended, at the latest once Stop below cut them off
		s.g.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.g.Stop()
		<-done
		return ctx.Err()
	}
}
