# The two commands a newcomer needs: `make run` and `make test`.
GO        ?= go
BIN       ?= bin/gateway
FUZZTIME  ?= 30s
PKGS      := ./...

.PHONY: chromium console-screenshot run test test-unit test-load build lint bench bench-llm bench-tracing conformance fuzz redis postgres clean proto

## run: start the gateway on its embedded defaults (bbolt in ./data, echo agent, 127.0.0.1:9900); its "gateway listening" log line gives the console URL (/console)
# The binary runs by itself, not under `go run`, which exits 1 whenever it is interrupted:
# make said "Error 1" after a clean Ctrl-C.
run: build
	$(BIN) serve

## test: every test, integration included, with the race detector
TESTFLAGS := -race -shuffle=on -count=1 -tags=integration -timeout 15m
test: redis postgres chromium
	$(GO) test $(TESTFLAGS) $(PKGS)

## test-load: `make test` 3 times (RUNS=N) while two CPU burners keep both cores busy
test-load:
	./scripts/test-under-load.sh -n $(or $(RUNS),3)

## test-unit: the quick subset (no integration tag)
test-unit:
	$(GO) test -race -count=1 $(PKGS)

## build: the gateway binary in bin/
build:
	$(GO) build -o $(BIN) ./cmd/gateway

## lint: gofmt, go vet, the dependency-direction test and the deploy/ checks
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -count=1 ./internal/depcheck/
	GO=$(GO) ./scripts/lint-deploy.sh

## bench: gateway vs bare echo (concurrency 1 and 64, both dialects), vs an a2a-go echo (one and two cores), the ledger benchmarks, and PostgreSQL vs bbolt / one vs two instances / cross-instance latency
bench: build
	./scripts/bench.sh

## bench-llm: traffic shaped like agents: N streaming turns at once against a mock model streaming 30 tokens/s, the gateway beside the a2a-go peer (token delay p99, memory per turn, CPU per token)
bench-llm: build
	./scripts/bench-llm.sh

## bench-tracing: only tracing's cost (off, and on at 100% sampling to a local OTLP receiver, vs a build without tracing)
bench-tracing: build
	./scripts/bench-tracing.sh

## conformance: the official A2A TCK (both lines, all scopes) against the gateway with --agent tck.
# Not part of `make test`: the TCK lives beside the repo in ../shared/tck and needs Debian's
# python packages (../shared/tck/setup.sh once). The run is confined to a network namespace
# with loopback only (unshare --net), so the TCK's webhooks on example.com cannot be posted.
# See docs/conformance.md.
conformance:
	GO=$(GO) ./scripts/conformance.sh

## proto: regenerate grpcapi/a2apb from the spec's a2a.proto (needs protoc, protoc-gen-go
# and protoc-gen-go-grpc: see grpcapi/a2apb/generate.sh)
proto:
	$(GO) generate ./grpcapi/a2apb/

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./a2a/
	$(GO) test -run '^$$' -fuzz '^FuzzWireEncoding$$' -fuzztime $(FUZZTIME) ./a2a/
	$(GO) test -run '^$$' -fuzz '^FuzzKey$$' -fuzztime $(FUZZTIME) ./ledger/
	$(GO) test -run '^$$' -fuzz '^FuzzRender$$' -fuzztime $(FUZZTIME) ./history/
	$(GO) test -run '^$$' -fuzz '^FuzzFilter$$' -fuzztime $(FUZZTIME) ./history/
	$(GO) test -run '^$$' -fuzz '^FuzzEntryEncoding$$' -fuzztime $(FUZZTIME) ./ledger/
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME) ./ledger/
	$(GO) test -run '^$$' -fuzz '^FuzzAppendEntryJSON$$' -fuzztime $(FUZZTIME) ./ledger/
	$(GO) test -run '^$$' -fuzz '^FuzzBuild$$' -fuzztime $(FUZZTIME) ./projection/
	$(GO) test -run '^$$' -fuzz '^FuzzRedact$$' -fuzztime $(FUZZTIME) ./redact/
	$(GO) test -run '^$$' -fuzz '^FuzzCandidates$$' -fuzztime $(FUZZTIME) ./redact/
	$(GO) test -run '^$$' -fuzz '^FuzzStreamRedactor$$' -fuzztime $(FUZZTIME) ./redact/
	$(GO) test -run '^$$' -fuzz '^FuzzInputMarker$$' -fuzztime $(FUZZTIME) ./agent/
	$(GO) test -run '^$$' -fuzz '^FuzzUTF8Chunker$$' -fuzztime $(FUZZTIME) ./agent/
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./internal/sse/
	$(GO) test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME) ./push/
	$(GO) test -run '^$$' -fuzz '^FuzzCheckURL$$' -fuzztime $(FUZZTIME) ./push/
	$(GO) test -run '^$$' -fuzz '^FuzzPartialSuccessProto$$' -fuzztime $(FUZZTIME) ./internal/telemetry/otlpwire/
	$(GO) test -run '^$$' -fuzz '^FuzzEncodeAttributes$$' -fuzztime $(FUZZTIME) ./internal/telemetry/otlpwire/
	$(GO) test -run '^$$' -fuzz '^FuzzClientFrame$$' -fuzztime $(FUZZTIME) ./streaming/
	$(GO) test -run '^$$' -fuzz '^FuzzResolve$$' -fuzztime $(FUZZTIME) ./peers/
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) ./memory/
	$(GO) test -run '^$$' -fuzz '^FuzzSupported$$' -fuzztime $(FUZZTIME) ./memory/

## redis: make sure redis-server is installed for the tests that need one (they start their own)
redis:
	@./scripts/ensure-redis.sh

## chromium: make sure a Chromium is there for the console's browser tests (installs Debian's package as root)
chromium:
	@./scripts/ensure-chromium.sh

## console-screenshot: regenerate docs/console.png (the README's picture of a conversation page)
console-screenshot: chromium
	GATEWAY_CONSOLE_SCREENSHOT=$(CURDIR)/docs/console.png $(GO) test -count=1 -run 'TestConsoleBrowser$$' ./server/
## postgres: make sure PostgreSQL is installed for the tests that need one (they start their own)
postgres:
	@./scripts/ensure-postgres.sh

clean:
	rm -rf bin
