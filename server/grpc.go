package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/grpcapi"
	"github.com/a2a-gateway/gateway/turn"
)

// bindGRPC opens the gRPC binding's listener when Config.GRPCAddr is set (nothing is
// served on it before listenGRPC) and registers it for closing, for a start that fails
// before listen.
func (s *Server) bindGRPC() error {
	if s.cfg.GRPCAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (--grpc-addr): %w", s.cfg.GRPCAddr, err)
	}
	s.grpcLn = ln
	s.closers.add(func(context.Context) error {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("close gRPC listener: %w", err)
		}
		return nil // closed already by the gRPC server's stop
	})
	return nil
}

// listenGRPC starts the gRPC binding (package grpcapi) on the listener of bindGRPC: the
// A2AService over a dispatcher of the same handler the JSON-RPC endpoint serves (the
// runner behind the rate limit), with the same peer tokens and metrics. stopServing
// stops it beside the HTTP server.
func (s *Server) listenGRPC() {
	if s.grpcLn == nil {
		return
	}
	d := a2a.NewDispatcher(s.handler, a2a.TransportConfig{Logger: s.log, ExtendedCard: s.grpcExtendedCard,
		Observe: s.metrics.observeRequest})
	s.grpc = grpcapi.New(grpcapi.Config{Dispatcher: d, Authenticate: s.grpcPeer, Logger: s.log,
		TracerProvider: s.cfg.TracerProvider})
	ln := s.grpcLn
	go func() { s.grpcServed <- s.grpc.Serve(ln) }() // exits when stopServing stops the gRPC server
	cardURL := s.grpcCardInterface().URL
	if cardURL == "" {
		cardURL = "(the host of each card request, the gRPC port)"
	}
	s.log.Info("gRPC binding listening", "addr", ln.Addr().String(), "card_url", cardURL)
}

// grpcPeer gives a gRPC call its caller exactly as peerAuth does an HTTP request: with
// peer tokens, the peer whose token the metadata authorization bears ("Bearer <token>"),
// and a refusal otherwise (counted against the source as on HTTP, which is throttled
// after too many invalid tokens); without them, the peer "local".
func (s *Server) grpcPeer(ctx context.Context, authorization, remote string) (context.Context, error) {
	if !s.tokens.enabled() {
		return turn.WithPeer(ctx, contextid.LocalOwner), nil
	}
	src := authSource(&http.Request{RemoteAddr: remote})
	if left, throttled := s.authFails.throttled(src); throttled {
		s.metrics.authFailure("throttled")
		return ctx, &grpcapi.ThrottledError{RetryAfter: left}
	}
	reason := "missing"
	if tok, ok := bearerValue(authorization); ok {
		if peer, ok := s.tokens.lookup(tok); ok {
			return turn.WithPeer(ctx, peer), nil
		}
		reason = "invalid"
		s.authFailed(ctx, src, s.log.With("component", "auth"))
	}
	s.metrics.authFailure(reason)
	return ctx, grpcapi.ErrUnauthenticated
}

// grpcExtendedCard answers GetExtendedAgentCard over gRPC: the extended card of the HTTP
// endpoint (its URL is PublicURL, or the HTTP listener's address; the gRPC call's
// authority names the gRPC port).
func (s *Server) grpcExtendedCard(r *http.Request, d a2a.Dialect) ([]byte, error) {
	hr := &http.Request{Host: s.Addr(), Header: r.Header, URL: &neturl.URL{Path: "/"}}
	return s.extendedCard(hr.WithContext(r.Context()), d)
}

// grpcCardInterface is the card's GRPC entry: GRPCPublicAddr, else PublicURL's host with
// the gRPC port, else (URL "") the host each card request reached with the gRPC port.
func (s *Server) grpcCardInterface() a2a.CardInterface {
	_, port, _ := net.SplitHostPort(s.grpcLn.Addr().String())
	i := a2a.CardInterface{Binding: "GRPC", URL: s.cfg.GRPCPublicAddr, Port: port}
	if i.URL == "" && s.cfg.PublicURL != "" {
		if u, err := neturl.Parse(s.cfg.PublicURL); err == nil && u.Hostname() != "" {
			i.URL = net.JoinHostPort(u.Hostname(), port)
		}
	}
	return i
}

// GRPCAddr returns the address the gRPC binding listens on; "" when it is off.
func (s *Server) GRPCAddr() string {
	if s.grpcLn == nil {
		return ""
	}
	return s.grpcLn.Addr().String()
}

// stopGRPC stops the gRPC binding gracefully until ctx is done (then cuts its calls
// off) and returns its Serve error; nil when it is off.
func (s *Server) stopGRPC(ctx context.Context) error {
	if s.grpc == nil {
		return nil
	}
	var errs []error
	if err := s.grpc.GracefulStop(ctx); err != nil {
		errs = append(errs, fmt.Errorf("gRPC calls still running at the deadline: %w", err))
	}
	if err := <-s.grpcServed; err != nil {
		errs = append(errs, fmt.Errorf("serve gRPC: %w", err))
	}
	return errors.Join(errs...)
}
