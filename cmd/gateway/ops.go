package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/server"
)

// opsService is what the operator commands and `gateway send` call: the conversations
// service over a data dir opened in this process (--data-dir), or the running gateway's
// admin API (adminClient, --server), which answers with the same values and the same
// typed errors. *conversations.Service implements it.
type opsService interface {
	List(ctx context.Context, opts conversations.ListOptions) (conversations.Page, error)
	Show(ctx context.Context, ref conversations.Ref, opts conversations.ShowOptions) (conversations.ShowResult, error)
	Export(ctx context.Context, ref conversations.Ref, w io.Writer) error
	Verify(ctx context.Context, ref conversations.Ref) (conversations.VerifyReport, error)
	Replay(ctx context.Context, ref conversations.Ref, atSeq uint64) (conversations.ReplayResult, error)
	Calls(ctx context.Context, ref conversations.Ref) (conversations.CallTree, error)
	RecordOutbound(ctx context.Context, rec conversations.OutboundRecord) (conversations.RecordResult, error)
	RebuildMemory(ctx context.Context, ref conversations.Ref, write bool) (conversations.MemoryReport, error)
}

var _ opsService = (*conversations.Service)(nil)
var _ opsService = (*server.AdminClient)(nil)

// The service's views under the names this package's printers use.
type (
	convView     = conversations.Summary
	showResult   = conversations.ShowResult
	replayResult = conversations.ReplayResult
	verifyReport = conversations.VerifyReport
)

// errAmbiguousContext is the service's ambiguity: main's exitCode makes it exit 2 (a
// usage error: --peer is needed).
var errAmbiguousContext = conversations.ErrAmbiguous

func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc
}

func writeJSONIndent(w io.Writer, v any) error {
	return jsonEncoder(w).Encode(v)
}
