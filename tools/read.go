package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
)

// cardTimeout bounds the agent card fetch of one peer in peers_list.
const cardTimeout = 3 * time.Second

// peersList lists the peers that can be called, with their cards' descriptions, and the
// conversations the agent can continue with each.
func (tt *turnTools) peersList(ctx context.Context) outcome {
	dir, err := tt.directory(ctx)
	if err != nil {
		return failed("the peer directory could not be read")
	}
	var b strings.Builder
	ps := dir.Peers()
	if len(ps) == 0 {
		b.WriteString("no peers are configured\n")
	}
	for _, p := range ps {
		fmt.Fprintf(&b, "peer %s: %s\n", p.Name, tt.describe(ctx, p))
		for _, c := range dir.Conversations() {
			if c.Peer == p.Name {
				fmt.Fprintf(&b, "  conversation %s (%d turns, last %s)\n", c.ContextID, c.Turns, c.LastActivity.UTC().Format(time.RFC3339))
			}
		}
	}
	return outcome{text: b.String(), status: "ok"}
}

// describe is a peer's card's name and description, or why there is none.
func (tt *turnTools) describe(ctx context.Context, p peers.Peer) string {
	c, err := a2aclient.New(p.URL, a2aclient.Options{HTTPClient: tt.box.cfg.HTTPClient, Token: p.Token, Timeout: cardTimeout, TracerProvider: tt.box.cfg.TracerProvider})
	if err != nil {
		return "(no agent card)"
	}
	defer c.Close()
	card, err := c.Card(ctx)
	if err != nil {
		return "(its agent card did not answer)"
	}
	return strings.TrimSpace(card.Name + " — " + card.Description)
}

// historyArgs are conversation_history's arguments.
type historyArgs struct {
	ContextID string `json:"contextId"`
	Limit     int    `json:"limit"`
}

// History output bounds (as Hermes' a2a_history): the default and largest limit, and how
// much of one message is shown.
const (
	defaultHistoryLimit = 50
	maxHistoryLimit     = 200
	maxHistoryText      = 1000
)

// history returns the last messages of a conversation of the turn's owner, or of an
// outbound one its turns started: "Conversation ID (last N messages):", then
// "[role] text" per message.
func (tt *turnTools) history(ctx context.Context, raw string) outcome {
	var a historyArgs
	if err := json.Unmarshal([]byte(raw), &a); err != nil || a.ContextID == "" {
		return refused("'contextId' is required (see peers_list for known conversations)")
	}
	switch {
	case a.Limit == 0:
		a.Limit = defaultHistoryLimit
	case a.Limit < 1:
		a.Limit = 1
	case a.Limit > maxHistoryLimit:
		a.Limit = maxHistoryLimit
	}
	res, err := tt.readable(ctx, a.ContextID)
	if errors.Is(err, conversations.ErrNotFound) {
		return refused("no conversation %q that this agent can read (its caller's, or one it had with a peer)", a.ContextID)
	}
	if err != nil {
		return failed("the conversation could not be read")
	}
	var msgs []string
	for i := range res.Entries {
		if line, ok := historyLine(&res.Entries[i]); ok {
			msgs = append(msgs, line)
		}
	}
	if len(msgs) > a.Limit {
		msgs = msgs[len(msgs)-a.Limit:]
	}
	return outcome{text: fmt.Sprintf("Conversation %s (last %d messages):\n%s", a.ContextID, len(msgs), strings.Join(msgs, "\n")), status: "ok"}
}

// readable shows the conversation contextID that the turn may read: the turn's owner's
// own, else an outbound one that owner's turns started with a configured peer
// (peers.TurnOwner). No other owner is tried, so another peer's conversations, and the
// outbound ones their turns or the operator started, answer conversations.ErrNotFound
// whatever their contextId.
func (tt *turnTools) readable(ctx context.Context, contextID string) (conversations.ShowResult, error) {
	owners := []string{tt.t.Owner}
	for _, p := range tt.box.cfg.Peers {
		if peers.ValidName(p.Name) {
			owners = append(owners, peers.TurnOwner(p.Name, tt.t.Owner))
		}
	}
	for _, owner := range owners {
		res, err := tt.box.cfg.Conv.Show(ctx, conversations.Ref{ContextID: contextID, Owner: owner}, conversations.ShowOptions{})
		if !errors.Is(err, conversations.ErrNotFound) {
			return res, err
		}
	}
	return conversations.ShowResult{}, conversations.ErrNotFound
}

// historyLine renders a message or tool entry as "[role] text", the text cut at
// maxHistoryText bytes (on a rune boundary) with " …[truncated]".
func historyLine(e *ledger.Entry) (string, bool) {
	var who string
	switch e.Kind {
	case ledger.KindUserMessage:
		who = "[user]"
	case ledger.KindAgentReply:
		who = "[agent]"
	case ledger.KindToolCall:
		who = "[tool call]"
	case ledger.KindToolResult:
		who = "[tool result]"
	default:
		return "", false
	}
	var b strings.Builder
	for _, p := range e.Parts {
		b.WriteString(p.Text)
	}
	text := b.String()
	if len(text) > maxHistoryText {
		n := maxHistoryText
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text = text[:n] + " …[truncated]"
	}
	return who + " " + text, true
}
