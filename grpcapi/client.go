package grpcapi

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2a-gateway/gateway/grpcapi/a2apb"
)

// Sender sends SendMessage over one plaintext gRPC connection (HTTP/2, so concurrent
// calls share it): `gateway bench --binding grpc`. It is safe for concurrent use.
type Sender struct {
	conn *grpc.ClientConn
	c    a2apb.A2AServiceClient
	md   []string
}

// NewSender returns a Sender to the gRPC binding at addr (host:port, as the card's GRPC
// interface names it); token, when set, goes in the metadata authorization. It does not
// connect until the first call.
func NewSender(addr, token string) (*Sender, error) {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("gRPC client for %s: %w", addr, err)
	}
	md := []string{"a2a-version", "1.0"}
	if token != "" {
		md = append(md, "authorization", "Bearer "+token)
	}
	return &Sender{conn: conn, c: a2apb.NewA2AServiceClient(conn), md: md}, nil
}

// Send sends one user message of text in contextID and returns "" when the call
// succeeded, else "grpc <status code>" (e.g. "grpc FailedPrecondition" for a busy context).
func (s *Sender) Send(ctx context.Context, contextID, messageID, text string) string {
	req := &a2apb.SendMessageRequest{Message: &a2apb.Message{MessageId: messageID, ContextId: contextID,
		Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: text}}}}}
	if _, err := s.c.SendMessage(metadata.AppendToOutgoingContext(ctx, s.md...), req); err != nil {
		return "grpc " + status.Code(err).String()
	}
	return ""
}

// Close closes the connection.
func (s *Sender) Close() error { return s.conn.Close() }
