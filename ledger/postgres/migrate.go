package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the pg_advisory_xact_lock key that serializes migrations of instances
// starting together ("a2a-ledger" in ASCII, truncated to 63 bits).
const migrationLock = 0x6132612d6c656467

// migrate applies the embedded migrations not applied yet, in version order, all in one
// transaction under an advisory lock: instances starting together wait for the first,
// then find every version applied. PostgreSQL's DDL is transactional, so a failed
// migration leaves nothing behind. (A small runner rather than goose or golang-migrate:
// pressly/goose/v3 v3.30 upgrades grpc, genproto and golang.org/x/* across the whole
// module; one transaction under a transaction-scoped lock is all the ledger needs.)
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(files)
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS ledger_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		for _, f := range files {
			if err := applyOne(ctx, tx, f); err != nil {
				return err
			}
		}
		return nil
	})
}

// applyOne applies migration file f ("migrations/0001_name.sql") unless applied.
func applyOne(ctx context.Context, tx pgx.Tx, f string) error {
	name := strings.TrimPrefix(f, "migrations/")
	v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
	if err != nil {
		return fmt.Errorf("migration %s: no version number: %w", name, err)
	}
	var done bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM ledger_migrations WHERE version = $1)", v).Scan(&done); err != nil || done {
		return err
	}
	sql, err := migrations.ReadFile(f)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, string(sql)); err != nil {
		return fmt.Errorf("migration %s: %w", name, err)
	}
	_, err = tx.Exec(ctx, "INSERT INTO ledger_migrations (version, name) VALUES ($1, $2)", v, name)
	return err
}
