package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
	"github.com/a2a-gateway/gateway/server"
)

// sendStore is what `gateway send` needs of the conversations service: the known
// conversations, and the recording of an exchange. Both modes call the same service API:
// the running gateway's admin API (sendClient), or the service over the data dir
// (dataDirStore).
type sendStore interface {
	List(ctx context.Context, opts conversations.ListOptions) (conversations.Page, error)
	RecordOutbound(ctx context.Context, rec conversations.OutboundRecord) (conversations.RecordResult, error)
}

// openSendStore asks the gateway at o.server; when none answers there, it uses the
// ledger in o.dataDir. Recording through the gateway needs its admin token: o.token, or
// the one it wrote to o.dataDir's admin.token (a loopback --server only). Any other
// failure of the gateway (a refused token), or no token for a gateway that answers, is an
// error before anything is sent.
func openSendStore(ctx context.Context, o opsFlags, stderr io.Writer) (sendStore, error) {
	o = o.withLocalToken()
	ac := server.NewAdminClient(o.server, o.token)
	pctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	defer cancel()
	_, err := ac.List(pctx, conversations.ListOptions{Limit: 1})
	ac.Close()
	if err == nil && o.token == "" {
		return nil, fmt.Errorf("the local gateway at --server %s answers, but recording the exchange needs its admin token: give --admin-token (GATEWAY_ADMIN_TOKEN), or --data-dir of that gateway, whose %s it wrote (readable by its user only); nothing was sent", o.server, server.AdminTokenFile)
	}
	if err == nil {
		return sendClient{ac}, nil
	}
	if !errors.Is(err, server.ErrUnreachable) {
		return nil, fmt.Errorf("the local gateway at --server %s refused its admin API (check --admin-token or GATEWAY_ADMIN_TOKEN): %w; nothing was sent", o.server, err)
	}
	path := filepath.Join(o.dataDir, "ledger.db")
	fmt.Fprintf(stderr, "gateway: no gateway answers at %s; using the ledger %s directly\n", o.server, path)
	return dataDirStore{path: path, server: o.server, stderr: stderr}, nil
}

// knownConversations returns the conversations the store knows, outbound and inbound,
// for the peer directory.
func knownConversations(ctx context.Context, store sendStore) ([]peers.Conversation, error) {
	page, err := store.List(ctx, conversations.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the known conversations: %w; nothing was sent", err)
	}
	out := make([]peers.Conversation, 0, len(page.Conversations))
	for _, c := range page.Conversations {
		out = append(out, peers.Conversation{ContextID: c.ContextID, Owner: c.Peer, Turns: c.Turns, LastActivity: c.LastActivity})
	}
	return out, nil
}

// sendDirectory is the peer directory of a send: the configured peers, the known
// conversations, and the local gateway when one answered at --server (its local
// callers' conversations are continued there).
func sendDirectory(ctx context.Context, peerList []Peer, store sendStore, server string) (*peers.Directory, error) {
	known, err := knownConversations(ctx, store)
	if err != nil {
		return nil, err
	}
	dir := peers.NewDirectory(peerList, known)
	if _, ok := store.(sendClient); ok {
		dir = dir.WithGateway(server)
	}
	return dir, nil
}

// sendClient is the admin API client, its idle connections closed after each call (a
// send makes two calls, minutes apart).
type sendClient struct{ ac *server.AdminClient }

func (s sendClient) List(ctx context.Context, opts conversations.ListOptions) (conversations.Page, error) {
	defer s.ac.Close()
	return s.ac.List(ctx, opts)
}

func (s sendClient) RecordOutbound(ctx context.Context, rec conversations.OutboundRecord) (conversations.RecordResult, error) {
	defer s.ac.Close()
	return s.ac.RecordOutbound(ctx, rec)
}

// dataDirStore is the conversations service over the data dir's ledger, opened for each
// call so that it is held only briefly (what the ledger warns about as it opens goes to
// stderr).
type dataDirStore struct {
	path, server string
	stderr       io.Writer
}

func (s dataDirStore) open() (*ledger.Store, error) {
	led, err := ledger.Open(s.path, ledger.Options{}, warnLogger(s.stderr))
	if err != nil {
		return nil, fmt.Errorf("no gateway answers at --server %s, and opening its ledger directly failed (if a gateway runs on that data dir, point --server and --admin-token at it): %w", s.server, err)
	}
	return led, nil
}

// List lists the data dir's conversations; no ledger yet is no conversation.
func (s dataDirStore) List(ctx context.Context, opts conversations.ListOptions) (conversations.Page, error) {
	if _, err := os.Stat(s.path); errors.Is(err, os.ErrNotExist) {
		return conversations.Page{}, nil
	}
	led, err := s.open()
	if err != nil {
		return conversations.Page{}, err
	}
	page, err := conversations.New(led, conversations.Config{}).List(ctx, opts)
	return page, errors.Join(err, led.Close())
}

// RecordOutbound records rec in the data dir's ledger.
func (s dataDirStore) RecordOutbound(ctx context.Context, rec conversations.OutboundRecord) (conversations.RecordResult, error) {
	led, err := s.open()
	if err != nil {
		return conversations.RecordResult{}, err
	}
	res, err := conversations.New(led, conversations.Config{}).RecordOutbound(ctx, rec)
	return res, errors.Join(err, led.Close())
}
