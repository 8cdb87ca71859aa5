package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/websocket"
)

// streamWS runs one turn over the gateway's WebSocket: one connection, the request as
// its first frame, result frames read until the final event.
func streamWS(ctx context.Context, cfg LLMConfig, body []byte, t *tokenTrack) error {
	u, err := wsURL(cfg.URL)
	if err != nil {
		return err
	}
	h := http.Header{}
	if cfg.Token != "" {
		h.Set("Authorization", "Bearer "+cfg.Token)
	}
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, u, h)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("websocket: http %d", resp.StatusCode)
		}
		return fmt.Errorf("websocket: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // unblocks the read at ctx's end
	defer stop()
	if err := conn.WriteMessage(websocket.TextMessage, body); err != nil {
		return fmt.Errorf("websocket: %w", err)
	}
	for !t.done {
		_, data, err := conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("websocket: %w", err)
		}
		if err := t.frame(data); err != nil {
			return err
		}
	}
	return nil
}

// wsURL is the /ws endpoint of the gateway whose JSON-RPC endpoint is rpc.
func wsURL(rpc string) (string, error) {
	u, err := url.Parse(rpc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%w: llm: %q is not an http(s) URL", ErrInvalidConfig, rpc)
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path = "/ws"
	return u.String(), nil
}
