package postgres_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/ledgertest"
	"github.com/a2a-gateway/gateway/ledger/postgres"
)

// TestRunningMigrationBackfills: migration 0003 applied to a database written before it
// (running_tasks dropped, the migration unrecorded) fills running_tasks with what the
// appends kept: a task is running unless its last STATUS settles it.
func TestRunningMigrationBackfills(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	s, err := postgres.Open(ctx, dsn, postgres.Options{LargePartBytes: ledgertest.LargePartBytes}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := func(task, state string) ledger.Entry {
		return ledger.Entry{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit, State: state}
	}
	msg := func(task, text string) ledger.Entry {
		return ledger.Entry{TaskID: task, Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
			Role: ledger.RoleUser, Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}}
	}
	for _, req := range []ledger.AppendRequest{
		{Owner: "o", ContextID: "c1", Entries: []ledger.Entry{msg("t1", "a \u0000 nul"), st("t1", "working")}},
		{Owner: "o", ContextID: "c1", Entries: []ledger.Entry{msg("t2", "x"), st("t2", "working"), st("t2", "TASK_STATE_COMPLETED")}},
		{Owner: "p", ContextID: "c2", Entries: []ledger.Entry{msg("t3", "x"), st("t3", "input-required")}},
		{Owner: "p", ContextID: "c3", Entries: []ledger.Entry{msg("t4", "x")}},
		{Owner: "p", ContextID: "c2", Entries: []ledger.Entry{msg("t5", "x"), st("t5", "auth-required"), st("t5", "working"), msg("t5", "y")}},
	} {
		if _, err := s.Append(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	want, err := s.RunningTasks(ctx)
	if err != nil || len(want) != 3 {
		t.Fatalf("RunningTasks() = %+v, %v, want t1, t4, t5", want, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DROP TABLE running_tasks; DELETE FROM ledger_migrations WHERE version = 3`); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = postgres.Open(ctx, dsn, postgres.Options{LargePartBytes: ledgertest.LargePartBytes}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.RunningTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunningTasks() after the migration's backfill (-kept by appends +backfilled):\n%s", diff)
	}
}
