// Package a2apb is the Go code generated from the A2A v1.0 specification's a2a.proto
// (package lf.a2a.v1): the messages and the A2AService client and server stubs. Only
// package grpcapi (the gRPC binding) and tests use it. Regenerate with generate.sh.
package a2apb

//go:generate ./generate.sh
