package postgres

import (
	"context"
	"errors"
	"slices"

	"github.com/ragcanary/ragcanary/api/v1alpha1"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ragcanary/ragcanary/internal/safetext"
)

// notYetReplayed are the SQLSTATEs of a catalog object a statement needs
// and the server lacks: undefined_table, invalid_schema_name,
// undefined_function, undefined_column, undefined_object.
var notYetReplayed = []string{"42P01", "3F000", "42883", "42703", "42704"}

// readerBehind turns a reader statement's refusal into a Wait when the
// reader is a standby that has simply not replayed the schema yet: the
// writer prepares the same statements, and the reader's replay is behind
// the writer's WAL position, taken after that. Otherwise (a separate
// server without the schema, a standby past that position still lacking
// it, a refusal of another kind) err stands.
func (d *Driver) readerBehind(ctx context.Context, p *prepared, err error) error {
	var ce *CheckError
	var pgErr *pgconn.PgError
	if d.reader == d.writer || !errors.As(err, &ce) || !errors.As(err, &pgErr) ||
		!slices.Contains(notYetReplayed, safetext.SQLState(pgErr.Code)) {
		return err
	}
	onWriter := &prepared{sql: p.sql, params: map[string]int{}}
	if d.prepareOn(ctx, d.writer, onWriter, readerStatements) != nil {
		return err
	}
	var lsn string
	if d.writer.QueryRow(ctx, `select pg_current_wal_lsn()::text`).Scan(&lsn) != nil {
		return err
	}
	var behind bool
	if d.reader.QueryRow(ctx, `select pg_is_in_recovery() and coalesce(pg_last_wal_replay_lsn() < $1::pg_lsn, true)`, lsn).Scan(&behind) != nil || !behind {
		return err
	}
	return &CheckError{Reason: v1alpha1.ReasonReaderNotCaughtUp, Wait: true, Err: err,
		Message: "the reader is a standby that has not yet replayed the schema the writer holds (" + ce.Message + "); the check passes once it catches up"}
}
