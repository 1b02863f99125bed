package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// referenceDDL creates the reference schema. Every statement is idempotent;
// it runs in one transaction under an advisory lock so two checks of the
// same corpus never race on the catalog.
//
// Chunks carry the row-level security: the read policy asks a SECURITY
// DEFINER function whether the principal set in the transaction
// (ragcanary.principal), or a group it is a member of, holds a grant on the
// chunk's document. The reader therefore needs SELECT on chunks only, never
// on the ACL or membership tables. FORCE makes the policy apply to the
// tables' owner too, so a writer DSN used as the reader is filtered as well.
func referenceDDL(schema string) []string {
	s := pgx.Identifier{schema}.Sanitize()
	return []string{
		fmt.Sprintf(`create schema if not exists %s`, s),
		fmt.Sprintf(`create table if not exists %s.documents (
			id text primary key,
			title text not null,
			body text not null,
			updated_at timestamptz not null default now())`, s),
		fmt.Sprintf(`create table if not exists %[1]s.chunks (
			id text primary key,
			document_id text not null references %[1]s.documents (id) on delete cascade,
			ord integer not null,
			content text not null,
			tsv tsvector generated always as (to_tsvector('simple', content)) stored)`, s),
		fmt.Sprintf(`create index if not exists chunks_document_id on %s.chunks (document_id)`, s),
		fmt.Sprintf(`create index if not exists chunks_tsv on %s.chunks using gin (tsv)`, s),
		fmt.Sprintf(`create table if not exists %[1]s.document_acl (
			document_id text not null references %[1]s.documents (id) on delete cascade,
			principal text not null,
			primary key (document_id, principal))`, s),
		fmt.Sprintf(`create table if not exists %s.memberships (
			group_name text not null,
			principal text not null,
			primary key (group_name, principal))`, s),
		fmt.Sprintf(`create index if not exists memberships_principal on %s.memberships (principal)`, s),
		fmt.Sprintf(`create or replace function %[1]s.ragcanary_can_read(doc text) returns boolean
			language sql stable security definer set search_path = pg_catalog, pg_temp as $$
			select exists (
				select 1 from %[1]s.document_acl a
				where a.document_id = doc
				  and (a.principal = current_setting('ragcanary.principal', true)
				       or exists (select 1 from %[1]s.memberships m
				                  where m.group_name = a.principal
				                    and m.principal = current_setting('ragcanary.principal', true))))
			$$`, s),
		fmt.Sprintf(`revoke all on function %s.ragcanary_can_read(text) from public`, s),
		fmt.Sprintf(`alter table %s.chunks enable row level security`, s),
		fmt.Sprintf(`alter table %s.chunks force row level security`, s),
	}
}

// referencePolicies are created when missing (CREATE POLICY has no IF NOT
// EXISTS). Inserts are allowed by policy and limited by GRANTs; the cascade
// from deleting a document is a referential action, which row security does
// not filter.
func referencePolicies(schema string) map[string]string {
	s := pgx.Identifier{schema}.Sanitize()
	return map[string]string{
		"ragcanary_read":  fmt.Sprintf(`create policy ragcanary_read on %[1]s.chunks for select using (%[1]s.ragcanary_can_read(document_id))`, s),
		"ragcanary_write": fmt.Sprintf(`create policy ragcanary_write on %s.chunks for insert with check (true)`, s),
	}
}

// vectorDDL adds embeddings and an HNSW index where pgvector is installed.
func vectorDDL(schema string) []string {
	s := pgx.Identifier{schema}.Sanitize()
	return []string{
		fmt.Sprintf(`alter table %s.chunks add column if not exists embedding vector(%d)`, s, Dimensions),
		fmt.Sprintf(`create index if not exists chunks_embedding on %s.chunks using hnsw (embedding vector_cosine_ops)`, s),
	}
}

// readerGrants give the reader role what the reference search needs.
func readerGrants(schema, reader string) []string {
	s, r := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{reader}.Sanitize()
	return []string{
		fmt.Sprintf(`grant usage on schema %s to %s`, s, r),
		fmt.Sprintf(`grant select on %s.chunks to %s`, s, r),
		fmt.Sprintf(`grant execute on function %s.ragcanary_can_read(text) to %s`, s, r),
	}
}

// ensureSchema creates the reference schema on the writer. readerRole, when
// not the writer's own role, is granted what search needs.
func (d *Driver) ensureSchema(ctx context.Context, readerRole string) error {
	return pgx.BeginFunc(ctx, d.writer, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock(hashtext('ragcanary.schema.' || $1))`, d.schema); err != nil {
			return err
		}
		for _, q := range referenceDDL(d.schema) {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		if err := createMissingPolicies(ctx, tx, d.schema); err != nil {
			return err
		}
		var vector bool
		if err := tx.QueryRow(ctx, `select exists (select 1 from pg_extension where extname = 'vector')`).Scan(&vector); err != nil {
			return err
		}
		if vector {
			for _, q := range vectorDDL(d.schema) {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
		}
		var writerRole string
		if err := tx.QueryRow(ctx, `select current_user`).Scan(&writerRole); err != nil {
			return err
		}
		if readerRole != "" && readerRole != writerRole {
			for _, q := range readerGrants(d.schema, readerRole) {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func createMissingPolicies(ctx context.Context, tx pgx.Tx, schema string) error {
	rows, err := tx.Query(ctx, `select policyname from pg_policies where schemaname = $1 and tablename = 'chunks'`, schema)
	if err != nil {
		return err
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for name, q := range referencePolicies(schema) {
		if slices.Contains(have, name) {
			continue
		}
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// hasEmbeddings reports whether the reference chunks table has the vector
// column, which selects the hybrid statements.
func hasEmbeddings(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `select exists (select 1 from pg_attribute
		where attrelid = to_regclass(quote_ident($1) || '.chunks') and attname = 'embedding' and not attisdropped)`, schema).Scan(&ok)
	return ok, err
}
