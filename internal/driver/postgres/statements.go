package postgres

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Statements are the SQL the driver runs for each operation. An empty field
// uses the reference schema's statement. Each is one parameterised
// statement, prepared at check time and sent with its parameters, never
// concatenated. Parameters, in order (a statement may use a prefix of them):
//
//	createDocument  $1 id, $2 title, $3 body, $4 principals text[],
//	                $5 chunk texts text[], $6 chunk embeddings text[] (pgvector literals)
//	deleteDocument  $1 id
//	grant, revoke   $1 document id, $2 principal
//	addMember,
//	removeMember    $1 group, $2 principal
//	session         $1 persona subject; runs first in each read transaction
//	search          $1 query text, $2 k bigint, $3 query embedding text (pgvector literal);
//	                returns rows (chunk id text, document id text, score float8), best first;
//	                it runs as a cursor of which k rows are fetched, and an ID longer
//	                than 512 bytes fails the search
//
// CreateDocument runs deleteDocument then createDocument in one transaction,
// so createDocument only inserts. A session statement that returns columns
// but no row refuses the persona (the store does not know the subject).
type Statements struct {
	CreateDocument string
	DeleteDocument string
	Grant          string
	Revoke         string
	AddMember      string
	RemoveMember   string
	Session        string
	Search         string
}

// statement names, as the Corpus spec spells them (spec.driver.postgres.statements.<name>).
const (
	stmtCreateDocument = "createDocument"
	stmtDeleteDocument = "deleteDocument"
	stmtGrant          = "grant"
	stmtRevoke         = "revoke"
	stmtAddMember      = "addMember"
	stmtRemoveMember   = "removeMember"
	stmtSession        = "session"
	stmtSearch         = "search"
)

// maxParams is how many parameters each statement may use.
var maxParams = map[string]int{
	stmtCreateDocument: 6, stmtDeleteDocument: 1, stmtGrant: 2, stmtRevoke: 2,
	stmtAddMember: 2, stmtRemoveMember: 2, stmtSession: 1, stmtSearch: 3,
}

// writerStatements run on the writer pool, readerStatements on the reader's.
var (
	writerStatements = []string{stmtCreateDocument, stmtDeleteDocument, stmtGrant, stmtRevoke, stmtAddMember, stmtRemoveMember}
	readerStatements = []string{stmtSession, stmtSearch}
)

// byName returns the override of the named statement ("" when unset).
func (s Statements) byName(name string) string {
	switch name {
	case stmtCreateDocument:
		return s.CreateDocument
	case stmtDeleteDocument:
		return s.DeleteDocument
	case stmtGrant:
		return s.Grant
	case stmtRevoke:
		return s.Revoke
	case stmtAddMember:
		return s.AddMember
	case stmtRemoveMember:
		return s.RemoveMember
	case stmtSession:
		return s.Session
	case stmtSearch:
		return s.Search
	}
	return ""
}

// usesReferenceSearch reports whether search reads the reference tables, so
// their row-level security settings are what isolates personas.
func (s Statements) usesReferenceSearch() bool { return strings.TrimSpace(s.Search) == "" }

// rrfK is reciprocal rank fusion's constant (Cormack et al. 2009).
const rrfK = 60

// referenceStatements are the statements of the reference schema in
// schema; vector adds the embedding column and hybrid search.
func referenceStatements(schema string, vector bool) map[string]string {
	s := pgx.Identifier{schema}.Sanitize()
	chunks := fmt.Sprintf(`insert into %[1]s.chunks (id, document_id, ord, content)
		select $1 || '#' || (t.n - 1), $1, t.n - 1, t.chunk
		from unnest($5::text[]) with ordinality as t (chunk, n)`, s)
	search := fmt.Sprintf(`select c.id, c.document_id, ts_rank(c.tsv, q)::float8 as score
		from %[1]s.chunks c, plainto_tsquery('simple', $1) q
		where c.tsv @@ q
		order by score desc, c.id
		limit $2`, s)
	if vector {
		chunks = fmt.Sprintf(`insert into %[1]s.chunks (id, document_id, ord, content, embedding)
		select $1 || '#' || (t.n - 1), $1, t.n - 1, t.chunk, t.emb::vector
		from unnest($5::text[], $6::text[]) with ordinality as t (chunk, emb, n)`, s)
		// Both retrievers read the chunks table, so row-level security
		// filters inside each of them; the fusion only sees allowed rows.
		search = fmt.Sprintf(`with fts as (
			select c.id, c.document_id, row_number() over (order by ts_rank(c.tsv, q) desc, c.id) as r
			from %[1]s.chunks c, plainto_tsquery('simple', $1) q
			where c.tsv @@ q
			order by r
			limit $2),
		vec as (
			select v.id, v.document_id, row_number() over () as r
			from (select c.id, c.document_id from %[1]s.chunks c
			      order by c.embedding <=> $3::vector limit $2) v)
		select id, document_id, sum(1.0 / (%[2]d + r))::float8 as score
		from (select * from fts union all select * from vec) u
		group by id, document_id
		order by score desc, id
		limit $2`, s, rrfK)
	}
	return map[string]string{
		stmtCreateDocument: fmt.Sprintf(`with d as (insert into %[1]s.documents (id, title, body) values ($1, $2, $3) returning id),
		c as (%[2]s),
		a as (insert into %[1]s.document_acl (document_id, principal)
		      select distinct $1, p from unnest($4::text[]) as p)
		select count(*) from d`, s, chunks),
		stmtDeleteDocument: fmt.Sprintf(`delete from %s.documents where id = $1`, s),
		stmtGrant:          fmt.Sprintf(`insert into %s.document_acl (document_id, principal) values ($1, $2) on conflict do nothing`, s),
		stmtRevoke:         fmt.Sprintf(`delete from %s.document_acl where document_id = $1 and principal = $2`, s),
		stmtAddMember:      fmt.Sprintf(`insert into %s.memberships (group_name, principal) values ($1, $2) on conflict do nothing`, s),
		stmtRemoveMember:   fmt.Sprintf(`delete from %s.memberships where group_name = $1 and principal = $2`, s),
		stmtSession:        `select set_config('ragcanary.principal', $1, true)`,
		stmtSearch:         search,
	}
}
