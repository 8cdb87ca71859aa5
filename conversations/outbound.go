package conversations

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
	"github.com/a2a-gateway/gateway/redact"
)

// OutboundRecord is one exchange `gateway send` had with a peer, recorded in one ledger
// append; it is also the body of POST /admin/v1/outbound.
type OutboundRecord struct {
	// Peer is the configured peer's name, or the URL of a raw-URL target; the
	// conversation's owner is "out:" + Peer.
	Peer    string `json:"peer"`
	PeerURL string `json:"peerUrl"`
	// Via, when set, is the inbound owner (a peer's identity, or "local") whose turn's
	// tools made the exchange: the owner is then peers.TurnOwner(Peer, Via), a
	// conversation only that owner's turns reach (and Peer must be a configured name).
	Via string `json:"via,omitempty"`
	// Origin, when set, is the tool call that made the exchange; it is stored in the
	// outbound message's metadata, so the outbound conversation links back to it.
	Origin *Origin `json:"origin,omitempty"`
	// ContextID is the contextId the peer answered in.
	ContextID    string `json:"contextId"`
	RemoteTaskID string `json:"remoteTaskId,omitempty"`
	// State is the peer task's final state: completed, input-required or auth-required
	// (failed exchanges are not recorded).
	State          string `json:"state"`
	MessageID      string `json:"messageId,omitempty"`
	Text           string `json:"text"`
	ReplyMessageID string `json:"replyMessageId,omitempty"`
	Reply          string `json:"reply"`
}

// Origin is the tool call an outbound exchange came from: the conversation (owner and
// contextId) whose turn made it, the turn's task and the TOOL_CALL entry's id.
type Origin struct {
	Owner     string `json:"owner"`
	ContextID string `json:"contextId"`
	TaskID    string `json:"taskId,omitempty"`
	EntryID   string `json:"entryId,omitempty"`
}

// RecordResult says where an outbound exchange was recorded.
type RecordResult struct {
	Owner     string `json:"owner"`
	ContextID string `json:"contextId"`
	LastSeq   uint64 `json:"lastSeq"`
}

// ValidPeerName reports whether s can name a configured peer: letters, digits, '-', '_'
// and '.' ([peers.ValidName]), and not "local", so that peer identities, the local owner
// and outbound owners ("out:…") never collide.
func ValidPeerName(s string) bool {
	return s != contextid.LocalOwner && peers.ValidName(s)
}

func validHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) && u.Host != "" && u.User == nil
}

// Validate checks rec; every problem is a [*FieldError], all of them joined.
func (rec *OutboundRecord) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, invalid(field, format, args...)) }
	switch {
	case rec.Peer == "":
		bad("peer", "empty")
	case strings.HasPrefix(strings.ToLower(rec.Peer), "http://") || strings.HasPrefix(strings.ToLower(rec.Peer), "https://"):
		if !validHTTPURL(rec.Peer) {
			bad("peer", "%q is not an http(s) URL without user info", rec.Peer)
		} else if looksLikeCredential(rec.Peer) {
			// The peer names the conversation's owner, which is stored as it is.
			bad("peer", "the URL holds what looks like a credential; configure the peer by name instead")
		}
	case !ValidPeerName(rec.Peer):
		bad("peer", "%q is neither a peer name (letters, digits, '-', '_', '.') nor an http(s) URL", rec.Peer)
	}
	if rec.Via != "" && (!peers.ValidName(rec.Via) || !ValidPeerName(rec.Peer)) {
		bad("via", "%q needs a peer name as peer and is itself a name (letters, digits, '-', '_', '.')", rec.Via)
	}
	if o := rec.Origin; o != nil && (o.Owner == "" || contextid.Validate(o.ContextID) != nil) {
		bad("origin", "needs the owner and a valid contextId of the conversation the call was made in")
	}
	if !validHTTPURL(rec.PeerURL) {
		bad("peerUrl", "%q is not an http(s) URL without user info", rec.PeerURL)
	}
	var ce *contextid.Error
	if err := contextid.Validate(rec.ContextID); errors.As(err, &ce) {
		bad("contextId", "%s", ce.Reason)
	} else if looksLikeCredential(rec.ContextID) {
		// The conversation's identity is stored as it is: refused, not rewritten.
		bad("contextId", "looks like a credential; the exchange is not recorded")
	}
	switch st := a2a.TaskState(rec.State); {
	case st == a2a.StateCompleted, st.Interrupted():
	default:
		bad("state", "%q; want completed, input-required or auth-required (failed exchanges are not recorded)", rec.State)
	}
	if strings.TrimSpace(rec.Text) == "" {
		bad("text", "empty")
	}
	return errors.Join(errs...)
}

// OriginKey is the key of an outbound message's metadata that holds its [Origin].
const OriginKey = "origin"

// originMeta is the outbound message's metadata: {"origin": …} (redacted), or none.
func (rec *OutboundRecord) originMeta() json.RawMessage {
	if rec.Origin == nil {
		return nil
	}
	o := *rec.Origin
	o.Owner, o.ContextID, o.TaskID, o.EntryID = redact.Text(o.Owner), redact.Text(o.ContextID), redact.Text(o.TaskID), redact.Text(o.EntryID)
	b, _ := json.Marshal(map[string]Origin{OriginKey: o})
	return b
}

// owner is the ledger owner rec is recorded under.
func (rec *OutboundRecord) owner() string {
	if rec.Via != "" {
		return peers.TurnOwner(rec.Peer, rec.Via)
	}
	return peers.Owner(rec.Peer)
}

// looksLikeCredential reports whether s holds what the redactor replaces.
func looksLikeCredential(s string) bool {
	_, n := redact.TextCount(s)
	return n > 0
}

// appendRequest is the ledger append of rec: our message (operator-trusted), the peer's
// reply (untrusted, with the peer's URL and task id) and the final status. Every text
// and metadata string is redacted the way a turn redacts what it stores (DESIGN X-3), and
// so are the message ids (the peer chose the reply's; a record's ids are no identity a
// later request names, so a credential in one is replaced rather than refused).
func (rec *OutboundRecord) appendRequest() ledger.AppendRequest {
	meta, _ := json.Marshal(struct {
		PeerURL      string `json:"peerUrl"`
		RemoteTaskID string `json:"remoteTaskId,omitempty"`
	}{redact.Text(rec.PeerURL), redact.Text(rec.RemoteTaskID)})
	text := func(s string) []ledger.Part {
		if s == "" {
			return nil
		}
		return []ledger.Part{{Kind: ledger.PartText, Text: redact.Text(s)}}
	}
	return ledger.AppendRequest{Owner: rec.owner(), ContextID: rec.ContextID, Entries: []ledger.Entry{
		{Kind: ledger.KindUserMessage, Trust: ledger.TrustOperator, Visibility: ledger.VisibilityModel,
			Actor: contextid.LocalOwner, MessageID: redact.Text(rec.MessageID), Role: ledger.RoleUser, Parts: text(rec.Text), Metadata: rec.originMeta()},
		{Kind: ledger.KindAgentReply, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
			Actor: rec.Peer, MessageID: redact.Text(rec.ReplyMessageID), Role: ledger.RoleAgent, Parts: text(rec.Reply), Metadata: meta},
		{Kind: ledger.KindStatus, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
			Actor: rec.Peer, State: rec.State, Metadata: meta},
	}}
}

// RecordOutbound validates rec, redacts it and appends it in one ledger append under the
// owner "out:" + rec.Peer (with rec.Via, peers.TurnOwner's). Errors: [*FieldError]s (joined) for a record that fails
// validation, the ledger's own validation (a message id too long) included, and nothing
// is stored; otherwise the ledger's.
func (s *Service) RecordOutbound(ctx context.Context, rec OutboundRecord) (RecordResult, error) {
	if err := rec.Validate(); err != nil {
		return RecordResult{}, err
	}
	res, err := s.led.Append(ctx, rec.appendRequest())
	if err != nil {
		return RecordResult{}, fromLedger(err)
	}
	return RecordResult{Owner: rec.owner(), ContextID: rec.ContextID, LastSeq: res.Entries[len(res.Entries)-1].Seq}, nil
}
