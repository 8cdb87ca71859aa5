package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"

	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
	"github.com/a2a-gateway/gateway/peers"
)

// listedPeer and listedConversation are the rows of `send --list --json`.
type listedPeer struct {
	Target string     `json:"target"`
	Name   string     `json:"name"`
	URL    string     `json:"url"`
	Card   cardStatus `json:"card"`
}

type cardStatus struct {
	OK    bool   `json:"ok"`
	Name  string `json:"name,omitempty"`  // the card's agent name
	Error string `json:"error,omitempty"` // why it did not answer
}

type listedConversation struct {
	Target       string    `json:"target"`
	ContextID    string    `json:"contextId"`
	Peer         string    `json:"peer"`
	Turns        int       `json:"turns"`
	LastActivity time.Time `json:"lastActivity"`
}

// unlistedConversation is a known conversation no TARGET names.
type unlistedConversation struct {
	ContextID    string `json:"contextId"`
	Peer         string `json:"peer"`
	Reason       string `json:"reason"`
	ContinueWith string `json:"continueWith,omitempty"`
}

// sendTargets is the listing of `send --list`.
type sendTargets struct {
	Peers         []listedPeer           `json:"peers"`
	Conversations []listedConversation   `json:"conversations"`
	Unlisted      []unlistedConversation `json:"unlisted,omitempty"`
	noConfig      string                 // configFile.noConfigHint: why there are no peers
}

// sendList prints the targets: the sendable peers (their cards fetched concurrently,
// each within cardTimeout) and the known conversations: outbound ones, and the local
// gateway's conversations with callers without a token (peer "local").
func sendList(ctx context.Context, dir *peers.Directory, cf configFile, cardTimeout time.Duration, asJSON bool, stdout, stderr io.Writer) error {
	cards := probeCards(ctx, dir.Peers(), cardTimeout)
	t := sendTargets{Peers: []listedPeer{}, Conversations: []listedConversation{}, noConfig: cf.noConfigHint()}
	for i, p := range dir.Peers() {
		if target := dir.PeerTarget(p); target != "" {
			t.Peers = append(t.Peers, listedPeer{Target: target, Name: p.Name, URL: p.URL, Card: cards[i]})
		}
	}
	for _, c := range append(dir.Conversations(), dir.Local()...) {
		target := dir.ConversationTarget(c)
		switch {
		case strings.ContainsFunc(target, unicode.IsSpace):
			// The text listing's first column could not show it; keep both listings equal.
			t.Unlisted = append(t.Unlisted, unlistedConversation{ContextID: c.ContextID, Peer: c.Peer,
				Reason: "its contextId holds white space", ContinueWith: "gateway send " + shellQuote(target)})
		case target != "":
			t.Conversations = append(t.Conversations, listedConversation{Target: target, ContextID: c.ContextID, Peer: c.Peer, Turns: c.Turns, LastActivity: c.LastActivity})
		default:
			t.Unlisted = append(t.Unlisted, unlistedReason(dir, c))
		}
	}
	if asJSON {
		return writeJSONIndent(stdout, t)
	}
	return printTargets(t, stdout, stderr)
}

// probeCards fetches the agent card of every peer concurrently, each within timeout.
func probeCards(ctx context.Context, ps []Peer, timeout time.Duration) []cardStatus {
	tr := peers.NewTransport()
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	cards := make([]cardStatus, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { cards[i] = probeCard(ctx, hc, p, timeout) }) // exits within timeout
	}
	wg.Wait()
	return cards
}

// printTargets is the text form of send --list: a table of peers, one of
// conversations, and on stderr what is missing or not listed.
func printTargets(t sendTargets, stdout, stderr io.Writer) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if len(t.Peers) > 0 {
		fmt.Fprintln(tw, "TARGET\tURL\tAGENT CARD")
		for _, p := range t.Peers {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Target, p.URL, p.Card.summary())
		}
	} else if t.noConfig != "" {
		fmt.Fprintln(stderr, "gateway: no peers: "+t.noConfig+"; a URL target needs none")
	} else {
		fmt.Fprintln(stderr, "gateway: no peers with a url in the config file (its peers: list); a URL target needs none")
	}
	if len(t.Conversations) > 0 {
		if len(t.Peers) > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintln(tw, "TARGET\tPEER\tTURNS\tLAST ACTIVITY")
		for _, c := range t.Conversations {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", c.Target, c.Peer, c.Turns, fmtTime(c.LastActivity))
		}
	} else {
		fmt.Fprintln(stderr, "gateway: no outbound conversations yet")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, u := range t.Unlisted {
		if u.ContinueWith != "" {
			fmt.Fprintf(stderr, "gateway: conversation %q with %s is not listed as a target (%s); continue it with: %s MESSAGE\n", u.ContextID, u.Peer, u.Reason, u.ContinueWith)
		} else {
			fmt.Fprintf(stderr, "gateway: conversation %q with %s is not listed as a target (%s)\n", u.ContextID, u.Peer, u.Reason)
		}
	}
	return nil
}

// summary is the AGENT CARD column of the text listing.
func (c cardStatus) summary() string {
	switch {
	case c.OK && c.Name != "":
		return fmt.Sprintf("answers (%s)", oneLine(c.Name, 60))
	case c.OK:
		return "answers"
	}
	// The last clause of the description says what went wrong ("connection refused",
	// "HTTP 404 Not Found (check the URL)"); --json has all of it.
	msg := c.Error
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return "no answer: " + oneLine(msg, 100)
}

// unlistedReason says why no TARGET names c, and how to continue it.
func unlistedReason(dir *peers.Directory, c peers.Conversation) unlistedConversation {
	u := unlistedConversation{ContextID: c.ContextID, Peer: c.Peer}
	if c.Owner == peers.LocalOwner {
		u.Reason = "a local caller's conversation whose contextId is also a peer name, a URL or an outbound conversation's"
		return u
	}
	_, err := dir.Resolve(c.ContextID)
	var amb *peers.AmbiguousError
	switch {
	case errors.Is(err, peers.ErrNotSendable):
		u.Reason = "its peer is no longer configured with a url"
		return u
	case errors.As(err, &amb):
		u.Reason = "its contextId is known with several peers"
	default:
		u.Reason = "its contextId is also a peer name or a URL"
	}
	peerTarget := c.Peer
	if t, err := dir.Resolve(c.Peer); err == nil && t.Kind != peers.KindConversation && t.Owner == c.Owner {
		peerTarget = dir.PeerTarget(peers.Peer{Name: t.Name})
		if t.Kind == peers.KindURL {
			peerTarget = t.URL
		}
	}
	if peerTarget != "" {
		u.ContinueWith = fmt.Sprintf("gateway send %s --context %s", shellQuote(peerTarget), shellQuote(c.ContextID))
	}
	return u
}

// probeCard fetches p's agent card within timeout. The error kept is the client's own
// description of the failure (a2a's transport failures all say so first).
func probeCard(ctx context.Context, hc *http.Client, p Peer, timeout time.Duration) cardStatus {
	c, err := a2aclient.New(p.URL, a2aclient.Options{HTTPClient: hc, Token: p.Token, Timeout: timeout})
	if err != nil {
		return cardStatus{Error: err.Error()}
	}
	card, err := c.Card(ctx)
	if err != nil {
		return cardStatus{Error: err.Error()}
	}
	return cardStatus{OK: true, Name: card.Name}
}
