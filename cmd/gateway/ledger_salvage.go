package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/a2a-gateway/gateway/ledger"
)

const ledgerSalvageUsage = `Usage: gateway ledger salvage --out FILE [--data-dir DIR] [--json]

Copies every intact conversation of DIR/ledger.db (its entries, task index, artifacts and
what finds it by contextId) to the new ledger file FILE, and lists each conversation it
left out and why. A conversation is intact when its pages and its hash chain verify. The
data dir is only read. Stop the gateway first: a running gateway holds the file. FILE
must not exist. To serve the copy, put it in place of DIR/ledger.db (keep the damaged
file); the conversations left out stay refused (CONVERSATION_DAMAGED) instead of starting
anew. Its warnings, and about once a second how far the copy has got, go to stderr as log
lines.

'gateway serve' does this by itself at start when the ledger has damaged pages, and keeps
the damaged file beside the new one (ledger.db.damaged-<time>).

Exit status: 0 when the copy was written (whatever it left out); 1 when it could not be;
2 for a usage mistake.

Flags:
`

// stderrLogger is the logger of an operator command's long ledger work (upgrade,
// salvage): its warnings and its progress, about once a second, as text lines on w.
func stderrLogger(w io.Writer) *slog.Logger {
	return levelLogger(w, slog.LevelInfo)
}

// warnLogger is the logger of an operator command that opens a data dir's ledger
// (conversations, ledger verify, ledger copy): what the ledger warns about as it opens
// (a write-ahead log replayed with damage, a file salvaged), as text lines on w, and
// nothing of its routine.
func warnLogger(w io.Writer) *slog.Logger {
	return levelLogger(w, slog.LevelWarn)
}

func levelLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// runLedgerSalvage is `gateway ledger salvage`.
func runLedgerSalvage(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := newFlagSet("ledger salvage")
	var dataDir, out string
	var asJSON bool
	ef, cf := bindClientConfig(fs, lookup, args)
	ef.String(&dataDir, "data-dir", "./data", "the data dir whose ledger.db to salvage")
	fs.StringVar(&out, "out", "", "the new ledger file to write (must not exist)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	help := func() { fmt.Fprint(stdout, ledgerSalvageUsage); printFlags(stdout, fs) }
	if err := parseOps(fs, ef, args, 0, "", help); err != nil {
		return err
	}
	if out == "" {
		return usageError{"ledger salvage needs --out FILE"}
	}
	src := filepath.Join(dataDir, "ledger.db")
	rep, err := ledger.Salvage(ctx, src, out, stderrLogger(stderr))
	if err != nil {
		return fmt.Errorf("ledger salvage: %w%s", err, cf.missingLedgerHint(err))
	}
	if asJSON {
		return writeJSONIndent(stdout, rep)
	}
	for _, q := range rep.Skipped {
		fmt.Fprintf(stdout, "SKIPPED  context %q  peer %q  key %s: %s\n", q.ContextID, q.Owner, q.Key, q.Reason)
	}
	for _, f := range rep.FileFaults {
		fmt.Fprintf(stdout, "DAMAGED  the file's tree of conversations: %s\n", f)
	}
	fmt.Fprintf(stdout, "salvaged %d conversation(s) of %s into %s; %d left out\n", rep.Copied, src, out, len(rep.Skipped))
	return nil
}
