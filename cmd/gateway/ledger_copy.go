package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/server"
)

// ledgerCopyUsage heads `gateway ledger copy --help`.
const ledgerCopyUsage = `Usage: gateway ledger copy --from STORE --to STORE

Copies every conversation of one ledger into another, entry for entry with the same
hashes: a data dir (its bbolt ledger.db) into PostgreSQL (postgres://…), or back. It
verifies every source chain before copying it and every copied chain after. Interrupted,
it can be run again: a conversation already copied is verified and skipped, one copied in
part is continued. The source is only read; run it with the gateways stopped (a data
dir can be opened by one process at a time).

Flags:
`

// runLedgerCopy is `gateway ledger copy`.
func runLedgerCopy(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := newFlagSet("ledger copy")
	var from, to string
	fs.StringVar(&from, "from", "", "the ledger to copy: a data dir, or a postgres:// URL")
	fs.StringVar(&to, "to", "", "the ledger to copy into: a data dir, or a postgres:// URL")
	help := func() { fmt.Fprint(stdout, ledgerCopyUsage); printFlags(stdout, fs) }
	if _, err := parseFlags(fs, fs.Name(), args, false, help); err != nil {
		return err
	}
	if from == "" || to == "" {
		return usageError{"ledger copy needs --from and --to"}
	}
	if !server.IsStoreURL(from) {
		if _, err := os.Stat(filepath.Join(from, "ledger.db")); err != nil {
			return fmt.Errorf("--from %s: no ledger: %w", from, err)
		}
	}
	src, err := openStore(ctx, from, stderr)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := openStore(ctx, to, stderr)
	if err != nil {
		return err
	}
	defer dst.Close()
	n, err := conversations.CopyLedger(ctx, src, dst, func(c ledger.Conversation) {
		fmt.Fprintf(stdout, "copied  context %q  peer %q  %d entries\n", c.ContextID, c.Owner, c.LastSeq)
	})
	if err != nil {
		return fmt.Errorf("ledger copy: after %d conversation(s): %w", n, err)
	}
	fmt.Fprintf(stdout, "ok: %d conversation(s) copied and verified\n", n)
	return nil
}

// openStore opens a store named by a postgres:// URL or a data dir (created if needed);
// what the ledger warns about as it opens goes to stderr.
func openStore(ctx context.Context, name string, stderr io.Writer) (server.Ledger, error) {
	if !server.IsStoreURL(name) {
		if err := os.MkdirAll(name, 0o750); err != nil {
			return nil, err
		}
		return server.OpenLedger(ctx, "", name, ledger.Options{}, warnLogger(stderr))
	}
	return server.OpenLedger(ctx, name, "", ledger.Options{}, warnLogger(stderr))
}

// openStoreService is the conversations service over the PostgreSQL store o.store, read
// directly (gateways may be running on it: the database serves them all).
func openStoreService(ctx context.Context, o opsFlags, stderr io.Writer) (opsService, func(), error) {
	if !server.IsStoreURL(o.store) {
		return nil, nil, usageError{"--store: want a postgres://… URL"}
	}
	led, err := server.OpenLedger(ctx, o.store, "", ledger.Options{OnVerify: o.onVerify}, nil)
	if err != nil {
		return nil, nil, err
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "gateway: reading the store at %s directly\n", server.RedactURL(o.store))
	}
	return conversations.New(led, conversations.Config{Policy: o.policy}), func() { _ = led.Close() }, nil
}
