package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/a2a-gateway/gateway/a2a"
	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
)

// sendArgs are peer_send's arguments.
type sendArgs struct {
	Target    string `json:"target"`
	Message   string `json:"message"`
	ContextID string `json:"contextId"`
}

// peerSend sends a message to a peer as `gateway send` does and returns its reply. The
// exchange is recorded under the turn owner's own outbound owner (peers.TurnOwner), so
// only that owner's turns see it again; callID, the TOOL_CALL entry's id, is its origin.
func (tt *turnTools) peerSend(ctx context.Context, raw, callID string) outcome {
	var a sendArgs
	if err := json.Unmarshal([]byte(raw), &a); err != nil || a.Target == "" || strings.TrimSpace(a.Message) == "" {
		return refused("peer_send wants {\"target\": a peer's name, \"message\": text, \"contextId\": optional}")
	}
	tg, contextID, out := tt.resolve(ctx, a)
	if out != nil {
		return *out
	}
	hops, err := tt.chain(ctx)
	if err != nil {
		return failed("this conversation's hop count could not be read")
	}
	if out := tt.admit(hops, tg, contextID); out != nil {
		return *out
	}
	msg := a2a.Message{MessageID: uuid.NewString(), ContextID: contextID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(a.Message)},
		Metadata: map[string]any{HopsExtension: hops.Next(tt.box.cfg.Self, tt.t.ContextID)}, Extensions: []string{HopsExtension}}
	rep, err := tt.deliver(ctx, tg, msg)
	if err != nil {
		if ctx.Err() != nil {
			return failed("the turn's time for tools ran out before %s answered", tg.Peer())
		}
		tt.box.cfg.Logger.WarnContext(ctx, "peer_send failed", "peer", tg.Peer(), "err", err)
		return failed("%s did not answer: %v", tg.Peer(), err)
	}
	owner := peers.TurnOwner(tg.Name, tt.t.Owner)
	link := &outboundLink{Peer: tg.Name, Owner: owner, ContextID: rep.contextID, RemoteTaskID: rep.taskID, State: string(rep.state)}
	if rep.contextID != "" {
		rec := conversations.OutboundRecord{Peer: tg.Name, Via: tt.t.Owner, PeerURL: tg.URL, ContextID: rep.contextID, RemoteTaskID: rep.taskID,
			State: string(rep.state), MessageID: msg.MessageID, Text: a.Message, ReplyMessageID: rep.messageID, Reply: rep.text,
			Origin: &conversations.Origin{Owner: tt.t.Owner, ContextID: tt.t.ContextID, TaskID: tt.t.TaskID, EntryID: callID}}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := tt.box.cfg.Conv.RecordOutbound(rctx, rec); err != nil {
			tt.box.cfg.Logger.WarnContext(ctx, "peer_send: the exchange was not recorded", "peer", tg.Name, "err", err)
		}
	}
	text := "reply from " + tg.Name + " (contextId " + rep.contextID + ", state " + string(rep.state) + "; pass this contextId to continue):\n" + rep.text
	return outcome{text: text, status: "ok", link: link}
}

// resolve maps the arguments to a configured peer and the contextId to send in, with the
// target grammar of `gateway send` over the turn owner's own directory: a contextId,
// given as the target or as contextId, must name an outbound conversation that owner's
// turns started with that peer.
func (tt *turnTools) resolve(ctx context.Context, a sendArgs) (peers.Target, string, *outcome) {
	dir, err := tt.directory(ctx)
	if err != nil {
		o := failed("the peer directory could not be read")
		return peers.Target{}, "", &o
	}
	tg, err := dir.Resolve(a.Target)
	if err != nil {
		o := refused("target %q: %v; use a peer's name from peers_list", a.Target, err)
		return tg, "", &o
	}
	switch {
	case tg.Kind == peers.KindPeer && a.ContextID == "":
		return tg, "", nil
	case tg.Kind == peers.KindPeer:
		for _, c := range dir.Conversations() {
			if c.ContextID == a.ContextID && strings.EqualFold(c.Peer, tg.Name) {
				return tg, a.ContextID, nil
			}
		}
		o := refused("no conversation %q with %s that this agent started; leave contextId out to start a new one (peers_list shows the ones you can continue)", a.ContextID, tg.Name)
		return tg, "", &o
	case tg.Kind == peers.KindConversation && tg.Name != "":
		if a.ContextID != "" && a.ContextID != tg.ContextID {
			o := refused("target %q continues conversation %q but contextId says %q; give one of them", a.Target, tg.ContextID, a.ContextID)
			return tg, "", &o
		}
		return tg, tg.ContextID, nil
	}
	o := refused("target %q is a %s; only configured peers (and their conversations) can be called by tools", a.Target, tg.Kind)
	return tg, "", &o
}

// chain is the hop data the turn's calls extend: the inbound message's, raised by what
// the conversation's earlier messages carried (a2a.Hops.Merge), so a caller cannot lower
// the count or drop links of a conversation by leaving them out of a later message.
func (tt *turnTools) chain(ctx context.Context) (a2a.Hops, error) {
	res, err := tt.box.cfg.Conv.Show(ctx, conversations.Ref{ContextID: tt.t.ContextID, Owner: tt.t.Owner}, conversations.ShowOptions{})
	if errors.Is(err, conversations.ErrNotFound) {
		return tt.hops, nil
	}
	if err != nil {
		return a2a.Hops{}, err
	}
	h := tt.hops
	for i := range res.Entries {
		e := &res.Entries[i]
		if e.Kind != ledger.KindUserMessage || len(e.Metadata) == 0 {
			continue
		}
		var meta map[string]any
		if json.Unmarshal(e.Metadata, &meta) == nil {
			h = h.Merge(hopsOf(meta))
		}
	}
	return h, nil
}

// admit applies the hop limit, the loop check and the per-peer limit to a call carrying
// hops; nil admits.
func (tt *turnTools) admit(hops a2a.Hops, tg peers.Target, contextID string) *outcome {
	cfg := &tt.box.cfg
	if hops.Hop+1 > cfg.HopLimit {
		o := refused("the hop limit is reached: this conversation is %d agent-to-agent call(s) deep and the limit is %d; answer with what you have", hops.Hop, cfg.HopLimit)
		return &o
	}
	if l, loop := loops(hops, tg.URL, contextID); loop || sameURL(tg.URL, cfg.Self) {
		if !loop {
			l = a2a.HopLink{URL: cfg.Self, ContextID: tt.t.ContextID}
		}
		o := refused("loop: %s would call back into %s (conversation %s), which is already part of this chain of calls; answer with what you have", tg.Peer(), l.URL, l.ContextID)
		return &o
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.sent[tg.URL] >= cfg.PerPeer {
		o := refused("this turn already sent %d messages to %s, the limit per peer", tt.sent[tg.URL], tg.Peer())
		return &o
	}
	tt.sent[tg.URL]++
	return nil
}

// directory is the peer directory of the turn's tools: the configured peers, and only
// the outbound conversations the turn owner's turns started with them (one listing per
// peer, by owner: another owner's conversations are never read).
func (tt *turnTools) directory(ctx context.Context) (*peers.Directory, error) {
	var known []peers.Conversation
	for _, p := range tt.box.cfg.Peers {
		if p.URL == "" || !peers.ValidName(p.Name) {
			continue
		}
		owner := peers.TurnOwner(p.Name, tt.t.Owner)
		page, err := tt.box.cfg.Conv.List(ctx, conversations.ListOptions{Owner: owner})
		if err != nil {
			return nil, err
		}
		for _, c := range page.Conversations {
			known = append(known, peers.Conversation{ContextID: c.ContextID, Owner: owner, Turns: c.Turns, LastActivity: c.LastActivity})
		}
	}
	return peers.NewDirectory(tt.box.cfg.Peers, known), nil
}

// reply is what a peer answered.
type reply struct {
	contextID, taskID, messageID string
	state                        a2a.TaskState
	text                         string
}

// deliver sends msg to tg (blocking send) and reads the reply.
func (tt *turnTools) deliver(ctx context.Context, tg peers.Target, msg a2a.Message) (reply, error) {
	cfg := &tt.box.cfg
	c, err := a2aclient.New(tg.URL, a2aclient.Options{HTTPClient: cfg.HTTPClient, Token: tg.Token, Dialect: a2aclient.DialectAuto, Timeout: cfg.PeerTimeout, TracerProvider: cfg.TracerProvider})
	if err != nil {
		return reply{}, err
	}
	defer c.Close()
	sctx, cancel := context.WithTimeout(ctx, cfg.PeerTimeout)
	defer cancel()
	res, err := c.SendMessage(sctx, &a2a.SendParams{Message: msg})
	if err != nil {
		return reply{}, err
	}
	return replyOf(res)
}

// errNoReply: the peer answered with neither a task nor a message.
var errNoReply = errors.New("the peer's answer has neither a task nor a message")

// replyOf reads the reply text and ids of a send's result.
func replyOf(res a2a.SendResult) (reply, error) {
	switch {
	case res.Message != nil:
		m := res.Message
		return reply{contextID: m.ContextID, taskID: m.TaskID, messageID: m.MessageID, state: a2a.StateCompleted, text: m.Text()}, nil
	case res.Task != nil:
		t := res.Task
		r := reply{contextID: t.ContextID, taskID: t.ID, state: t.Status.State}
		var b strings.Builder
		for _, a := range t.Artifacts {
			b.WriteString(a2a.PartsText(a.Parts))
		}
		if m := t.Status.Message; m != nil {
			if b.Len() == 0 {
				b.WriteString(m.Text())
			}
			r.messageID = m.MessageID
		}
		r.text = b.String()
		if r.state != a2a.StateCompleted && !r.state.Interrupted() {
			return r, errors.New("the peer's task ended " + string(r.state))
		}
		return r, nil
	}
	return reply{}, errNoReply
}
