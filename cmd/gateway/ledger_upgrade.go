package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/a2a-gateway/gateway/ledger"
)

const ledgerUpgradeUsage = `Usage: gateway ledger upgrade [--data-dir DIR] [--json]

Upgrades DIR/ledger.db from format 1 (a bucket per conversation) to format 2 (one shared
append-ordered log, DESIGN D-7): verifies the file, copies it into
DIR/ledger.db.format2.tmp, verifies the copy against it, keeps the old file as
DIR/ledger.db.format1.bak and renames the copy into place. Entries and their hashes do not
change. A kill at any moment leaves a data dir that starts (the old file or the verified
new one). A file already in format 2 is left alone. Stop the gateway first: a running
gateway holds the file. 'gateway serve' does this by itself at its first start on a
format-1 file. Delete the .format1.bak file once satisfied; earlier builds cannot read
format 2. Its warnings, and about once a second how far each pass (verify, copy, verify
the copy) has got, go to stderr as log lines.

Exit status: 0 when the file is in format 2; 1 when it could not be upgraded (it stays in
format 1); 2 for a usage mistake.

Flags:
`

// runLedgerUpgrade is `gateway ledger upgrade`.
func runLedgerUpgrade(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := newFlagSet("ledger upgrade")
	var dataDir string
	var asJSON bool
	ef, cf := bindClientConfig(fs, lookup, args)
	ef.String(&dataDir, "data-dir", "./data", "the data dir whose ledger.db to upgrade")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	help := func() { fmt.Fprint(stdout, ledgerUpgradeUsage); printFlags(stdout, fs) }
	if err := parseOps(fs, ef, args, 0, "", help); err != nil {
		return err
	}
	path := filepath.Join(dataDir, "ledger.db")
	rep, err := ledger.Upgrade(ctx, path, stderrLogger(stderr))
	if err != nil {
		return fmt.Errorf("ledger upgrade: %w%s", err, cf.missingLedgerHint(err))
	}
	if asJSON {
		return writeJSONIndent(stdout, rep)
	}
	if rep.AlreadyDone {
		fmt.Fprintf(stdout, "%s is already in format 2\n", path)
		return nil
	}
	fmt.Fprintf(stdout, "upgraded %s to format 2: %d conversation(s), %d entries verified; the format-1 file is kept as %s\n",
		path, rep.Conversations, rep.Entries, rep.Backup)
	return nil
}
