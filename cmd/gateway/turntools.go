package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/peers"
	"github.com/a2a-gateway/gateway/tools"
)

// turnToken returns the gateway URL and turn token an exec agent's command finds in its
// environment, and whether both are set: `gateway send` and `gateway conversations
// show` then run as that turn's tools (peer_send, conversation_history), recorded in the
// turn's conversation and under the same limits.
func turnToken(lookup func(string) (string, bool)) (url, token string, ok bool) {
	url, _ = lookup(tools.EnvURL)
	token, _ = lookup(tools.EnvTurnToken)
	return url, token, url != "" && token != ""
}

// callTurnTool posts one tool call with the turn's token and prints its result.
func callTurnTool(ctx context.Context, url, token, tool string, args any, stdout io.Writer) error {
	rawArgs, err := json.Marshal(args)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(tools.ToolRequest{Tool: tool, Arguments: rawArgs})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/")+tools.ToolsPath, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", tools.EnvURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	tracing.Inject(ctx, req.Header) // the turn's trace (TRACEPARENT), so the tool call joins it
	hc := &http.Client{Transport: peers.NewTransport()}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("the gateway at %s did not answer: %w", url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the gateway refused the tool call (HTTP %d): %s", resp.StatusCode, strings.TrimSpace(string(data)))
	}
	var out tools.ToolResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("the gateway's answer is not a tool result: %w", err)
	}
	fmt.Fprintln(stdout, out.Result)
	return nil
}

// sendAsTurn is `gateway send` inside an exec agent's turn: peer_send (or peers_list for
// --list) through the turn's tools.
func (cmd *sendCommand) sendAsTurn(ctx context.Context, url, token string, stdin io.Reader, stdout io.Writer) error {
	if cmd.o.list {
		return callTurnTool(ctx, url, token, tools.ToolPeersList, struct{}{}, stdout)
	}
	text, err := sendMessageText(cmd.positional, stdin)
	if err != nil {
		return err
	}
	args := struct {
		Target    string `json:"target"`
		Message   string `json:"message"`
		ContextID string `json:"contextId,omitempty"`
	}{cmd.positional[0], text, cmd.o.contextID}
	return callTurnTool(ctx, url, token, tools.ToolPeerSend, args, stdout)
}
