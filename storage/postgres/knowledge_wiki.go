package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/knowledge"
)

// PutWiki implements knowledge.Store. The page's host_sources get src
// first (moved there if present) and keep the newest keep.
func (s *KnowledgeStore) PutWiki(ctx context.Context, p *knowledge.WikiPage, src knowledge.Source, keep int) (err error) {
	defer fault.Wrap(&err, "write wiki page")
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := putSource(ctx, tx, p.TenantID, &src); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `INSERT INTO wiki_pages (tenant_id, id, agent_id, path, content, host_sources, updated_by)
			VALUES ($1, $2, $3, $4, $5, ARRAY[$6::text], $7)
			ON CONFLICT (tenant_id, (COALESCE(agent_id, '00000000-0000-0000-0000-000000000000'::uuid)), path) DO UPDATE SET
				content = EXCLUDED.content,
				host_sources = (ARRAY[$6::text] || array_remove(wiki_pages.host_sources, $6::text))[1:$8],
				updated_by = EXCLUDED.updated_by, revision = wiki_pages.revision + 1, updated_at = now()
			RETURNING id, host_sources, revision, updated_at`,
			p.TenantID, p.ID, nullable(p.AgentID), p.Path, p.Content, src.Key, p.UpdatedBy, keep).
			Scan(&p.ID, &p.HostSources, &p.Revision, &p.UpdatedAt)
		return mapErr(err, "wiki page")
	})
}

const wikiCols = `id, agent_id, path, content, host_sources, updated_by, revision, updated_at`

func scanWiki(row pgx.Row, tenantID uuid.UUID) (knowledge.WikiPage, error) {
	p := knowledge.WikiPage{TenantID: tenantID}
	var agent *uuid.UUID
	err := row.Scan(&p.ID, &agent, &p.Path, &p.Content, &p.HostSources, &p.UpdatedBy, &p.Revision, &p.UpdatedAt)
	p.AgentID = deref(agent)
	return p, err
}

// ownerIs matches a wiki's owner ($2): an employee's, or NULL for shared.
const ownerIs = `tenant_id = $1 AND agent_id IS NOT DISTINCT FROM $2`

// Wiki implements knowledge.Store.
func (s *KnowledgeStore) Wiki(ctx context.Context, tenantID, agentID uuid.UUID, path string) (knowledge.WikiPage, error) {
	p, err := scanWiki(s.db.Pool.QueryRow(ctx, `SELECT `+wikiCols+` FROM wiki_pages WHERE `+ownerIs+` AND path = $3`,
		tenantID, nullable(agentID), path), tenantID)
	return p, mapErr(err, "wiki page")
}

// Wikis implements knowledge.Store.
func (s *KnowledgeStore) Wikis(ctx context.Context, tenantID, agentID uuid.UUID, limit int) ([]knowledge.WikiPage, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT id, agent_id, path, '', host_sources, updated_by, revision, updated_at
		FROM wiki_pages WHERE `+ownerIs+` ORDER BY path LIMIT $3`, tenantID, nullable(agentID), limit)
	if err != nil {
		return nil, err
	}
	return collectWiki(rows, tenantID)
}

func collectWiki(rows pgx.Rows, tenantID uuid.UUID) ([]knowledge.WikiPage, error) {
	defer rows.Close()
	out := []knowledge.WikiPage{}
	for rows.Next() {
		p, err := scanWiki(rows, tenantID)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// DeleteWiki implements knowledge.Store.
func (s *KnowledgeStore) DeleteWiki(ctx context.Context, tenantID, agentID uuid.UUID, path string) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM wiki_pages WHERE `+ownerIs+` AND path = $3`, tenantID, nullable(agentID), path)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fault.New(fault.NotFound, "wiki page not found")
	}
	return nil
}
