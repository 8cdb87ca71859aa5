package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"

	"github.com/a2a-gateway/gateway/grpcapi"
)

// bindingProblems checks --binding: jsonrpc, http_json (checked with the rest of the
// config: v1.0 SendMessage), or grpc for the closed loop of SendMessage only (v1.0; no
// stream, burst or baseline).
func bindingProblems(o benchOptions) []error {
	switch o.binding {
	case "jsonrpc", "http_json":
		return nil
	case "grpc":
	default:
		return []error{fmt.Errorf("--binding %q: want jsonrpc, http_json or grpc", o.binding)}
	}
	var problems []error
	if o.cfg.Stream || o.burst > 0 || o.baseline || o.llm.profile != "" {
		problems = append(problems, errors.New("--binding grpc: not with --stream, --burst, --baseline or --profile (gRPC is benched with SendMessage in the closed loop)"))
	}
	return problems
}

// grpcSender finds the GRPC interface in the v1.0 card of the gateway at base and returns
// a sender to it, and its address.
func grpcSender(ctx context.Context, base, token string) (*grpcapi.Sender, string, error) {
	addr, err := cardGRPCAddr(ctx, base)
	if err != nil {
		return nil, "", err
	}
	s, err := grpcapi.NewSender(addr, token)
	return s, addr, err
}

// cardGRPCAddr reads the host:port of the first GRPC entry of the card's
// supportedInterfaces.
func cardGRPCAddr(ctx context.Context, base string) (string, error) {
	u, err := neturl.Parse(base)
	if err != nil {
		return "", fmt.Errorf("bench: URL %q: %w", base, err)
	}
	cardURL := u.ResolveReference(&neturl.URL{Path: "/.well-known/agent-card.json"}).String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cardURL, nil)
	if err != nil {
		return "", fmt.Errorf("bench: card request: %w", err)
	}
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("bench: fetch the card %s: %w", cardURL, err)
	}
	defer resp.Body.Close()
	var card struct {
		SupportedInterfaces []struct{ URL, ProtocolBinding string }
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &card)
	}
	if resp.StatusCode != http.StatusOK || err != nil {
		return "", fmt.Errorf("bench: the card %s: HTTP %d %v", cardURL, resp.StatusCode, err)
	}
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding == "GRPC" {
			return i.URL, nil
		}
	}
	return "", fmt.Errorf("bench: the card %s lists no GRPC interface (is the gateway serving --grpc-addr?)", cardURL)
}
