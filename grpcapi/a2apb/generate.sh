#!/bin/sh
# Regenerates a2a.pb.go and a2a_grpc.pb.go from proto/lf/a2a/v1/a2a.proto, the A2A v1.0
# specification's specification/a2a.proto (tag v1.0.0, package lf.a2a.v1) copied byte for
# byte; its go_package is overridden here (M option), not in the file. It sits under
# lf/a2a/v1/ so that it registers as "lf/a2a/v1/a2a.proto": a2a-go v0.3.3 (the bench
# peer, tests) registers its v0.3 proto as "a2a.proto", and protobuf-go panics on two
# files of one name in a binary. Run from this directory, or through
# `go generate ./grpcapi/a2apb/` / `make proto`. Needs, on PATH:
#   protoc 3.21+          apt-get install -y protobuf-compiler (brings google/protobuf/*.proto)
#   protoc-gen-go         go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   protoc-gen-go-grpc    go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
# proto/google/api/*.proto are minimal copies of the googleapis options a2a.proto uses.
set -eu
cd "$(dirname "$0")"
PKG=github.com/a2a-gateway/gateway/grpcapi/a2apb
protoc -I proto -I /usr/include \
  --go_out=. --go_opt=module=$PKG --go_opt="Mlf/a2a/v1/a2a.proto=$PKG;a2apb" \
  --go-grpc_out=. --go-grpc_opt=module=$PKG --go-grpc_opt="Mlf/a2a/v1/a2a.proto=$PKG;a2apb" \
  lf/a2a/v1/a2a.proto
