// Package grpcapi is the A2A v1.0 gRPC binding (specification §10): the A2AService of the
// specification's a2a.proto (generated in grpcapi/a2apb) served over the same
// [a2a.Dispatcher], and so the same Handler (the turn runner behind the rate limit), as
// the JSON-RPC endpoint: leases, the ledger, streams, redaction and peer isolation are
// shared, and a conversation started over one binding continues over the other.
//
// A call's protobuf request is turned into its v1.0 ProtoJSON params (protojson) and
// decoded by package a2a's v1.0 decoders; results and stream events are encoded by a2a's
// v1.0 encoders and read back into protobuf messages. Errors go through a2a's one error
// table, whose gRPC column gives the status code (status.go: the one place this binding
// maps errors), with a google.rpc.ErrorInfo detail (and a google.rpc.BadRequest for a
// field violation).
//
// Every call passes the edge (edge.go) first: the request id (metadata x-request-id, kept
// when valid, else made, and echoed in the response header), the trace context
// (traceparent) and a server span, the caller's identity (Config.Authenticate, from the
// metadata authorization), and the A2A-Version check (metadata a2a-version).
//
// This package and grpcapi/a2apb are the only importers of google.golang.org/grpc
// (internal/depcheck).
package grpcapi
