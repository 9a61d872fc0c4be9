package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/knowledge"
)

// KnowledgeStore implements knowledge.Store.
type KnowledgeStore struct{ db *DB }

var _ knowledge.Store = (*KnowledgeStore)(nil)

// NewKnowledgeStore returns the knowledge store on db.
func NewKnowledgeStore(db *DB) *KnowledgeStore { return &KnowledgeStore{db: db} }

// putSource records src (once) and locks its row for the transaction, so
// a write and a concurrent forget of its source happen one after the
// other: the forget removes what the write committed, or the write sees
// the tombstone. knowledge.ErrForgotten when it was forgotten.
func putSource(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, src *knowledge.Source) error {
	var forgotten bool
	err := tx.QueryRow(ctx, `INSERT INTO knowledge_sources (tenant_id, key, kind, agent_id, task_id, principal)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant_id, key) DO UPDATE SET kind = knowledge_sources.kind
		RETURNING forgotten_at IS NOT NULL, created_at`,
		tenantID, src.Key, src.Kind, nullable(src.AgentID), nullable(src.TaskID), src.Principal).Scan(&forgotten, &src.CreatedAt)
	if err != nil {
		return mapErr(err, "source")
	}
	if forgotten {
		return knowledge.ErrForgotten
	}
	return nil
}

// PutMemory implements knowledge.Store.
func (s *KnowledgeStore) PutMemory(ctx context.Context, m *knowledge.Memory) (err error) {
	defer fault.Wrap(&err, "store memory")
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := putSource(ctx, tx, m.TenantID, &m.Source); err != nil {
			return err
		}
		if len(m.Parents) > 0 {
			if err := checkParents(ctx, tx, m.TenantID, m.Parents); err != nil {
				return err
			}
		}
		err := tx.QueryRow(ctx, `INSERT INTO memories (tenant_id, id, agent_id, layer, subject, content, source_key, parents)
			VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($8::uuid[], '{}')) RETURNING created_at`,
			m.TenantID, m.ID, m.AgentID, m.Layer, m.Subject, m.Content, m.Source.Key, m.Parents).Scan(&m.CreatedAt)
		if err != nil {
			return mapErr(err, "memory")
		}
		if len(m.Facts) > 0 {
			_, err = tx.Exec(ctx, `INSERT INTO memory_facts (tenant_id, memory_id, ord, fact)
				SELECT $1, $2, o, f FROM unnest($3::text[]) WITH ORDINALITY AS t(f, o)`, m.TenantID, m.ID, m.Facts)
			if err != nil {
				return mapErr(err, "key fact")
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO memory_sources (tenant_id, memory_id, source_key, inherited)
			SELECT $1::uuid, $2::uuid, $3::text, false
			UNION
			SELECT DISTINCT $1::uuid, $2::uuid, source_key, true FROM memory_sources
			 WHERE tenant_id = $1::uuid AND memory_id = ANY($4::uuid[]) AND source_key <> $3::text`,
			m.TenantID, m.ID, m.Source.Key, m.Parents)
		return mapErr(err, "memory source")
	})
}

// checkParents locks the parents (so a forget cannot remove one under
// the write) and reports a missing one: ErrForgotten when a forget
// removed it, NotFound when it never existed in the tenant.
func checkParents(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, parents []uuid.UUID) error {
	var found, forgotten int
	err := tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM (SELECT 1 FROM memories WHERE tenant_id = $1 AND id = ANY($2) FOR SHARE) x),
			(SELECT count(*) FROM forgotten_memories WHERE tenant_id = $1 AND memory_id = ANY($2))`,
		tenantID, parents).Scan(&found, &forgotten)
	switch {
	case err != nil:
		return err
	case forgotten > 0:
		return knowledge.ErrForgotten
	case found < len(uniq(parents)):
		return fault.New(fault.NotFound, "parent memory not found")
	}
	return nil
}

func uniq(ids []uuid.UUID) map[uuid.UUID]bool {
	m := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// memoryCols select a memory with its facts and its source.
const memoryCols = `m.id, m.agent_id, m.layer, m.subject, m.content, m.parents, m.created_at,
	ARRAY(SELECT f.fact FROM memory_facts f WHERE f.tenant_id = m.tenant_id AND f.memory_id = m.id ORDER BY f.ord),
	s.key, s.kind, s.agent_id, s.task_id, s.principal, s.created_at`

const memoryFrom = ` FROM memories m JOIN knowledge_sources s ON s.tenant_id = m.tenant_id AND s.key = m.source_key `

func scanMemory(row pgx.Row, tenantID uuid.UUID, extra ...any) (knowledge.Memory, error) {
	m := knowledge.Memory{TenantID: tenantID}
	var agent, task *uuid.UUID
	err := row.Scan(append([]any{&m.ID, &m.AgentID, &m.Layer, &m.Subject, &m.Content, &m.Parents, &m.CreatedAt, &m.Facts,
		&m.Source.Key, &m.Source.Kind, &agent, &task, &m.Source.Principal, &m.Source.CreatedAt}, extra...)...)
	m.Source.AgentID, m.Source.TaskID = deref(agent), deref(task)
	if m.Facts == nil {
		m.Facts = []string{}
	}
	return m, err
}

// Memory implements knowledge.Store.
func (s *KnowledgeStore) Memory(ctx context.Context, tenantID, id uuid.UUID) (knowledge.Memory, error) {
	m, err := scanMemory(s.db.Pool.QueryRow(ctx, `SELECT `+memoryCols+memoryFrom+` WHERE m.tenant_id = $1 AND m.id = $2`, tenantID, id), tenantID)
	return m, mapErr(err, "memory")
}

// ByLayer implements knowledge.Store.
func (s *KnowledgeStore) ByLayer(ctx context.Context, tenantID, agentID uuid.UUID, layer knowledge.Layer, limit int) ([]knowledge.Memory, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+memoryCols+memoryFrom+`
		WHERE m.tenant_id = $1 AND m.agent_id = $2 AND ($3 = '' OR m.layer = $3)
		ORDER BY m.created_at DESC, m.id DESC LIMIT $4`, tenantID, agentID, string(layer), limit)
	if err != nil {
		return nil, err
	}
	return collectMemories(rows, tenantID)
}

func collectMemories(rows pgx.Rows, tenantID uuid.UUID) ([]knowledge.Memory, error) {
	defer rows.Close()
	out := []knowledge.Memory{}
	for rows.Next() {
		m, err := scanMemory(rows, tenantID)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Sources implements knowledge.Store.
func (s *KnowledgeStore) Sources(ctx context.Context, tenantID, agentID uuid.UUID, limit int) ([]knowledge.Source, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT key, kind, agent_id, task_id, principal, created_at, forgotten_at
		FROM knowledge_sources WHERE tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2)
		ORDER BY created_at DESC, key LIMIT $3`, tenantID, nullable(agentID), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []knowledge.Source{}
	for rows.Next() {
		var src knowledge.Source
		var agent, task *uuid.UUID
		var forgotten *time.Time
		if err := rows.Scan(&src.Key, &src.Kind, &agent, &task, &src.Principal, &src.CreatedAt, &forgotten); err != nil {
			return nil, err
		}
		src.AgentID, src.TaskID, src.ForgottenAt = deref(agent), deref(task), forgotten
		out = append(out, src)
	}
	return out, rows.Err()
}
