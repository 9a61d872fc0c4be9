package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/knowledge"
)

// Forget implements knowledge.Store. The source's row is locked first, so
// a write from it either committed before (and is removed here) or waits
// and then sees the tombstone.
func (s *KnowledgeStore) Forget(ctx context.Context, tenantID uuid.UUID, key, by string) (f knowledge.Forgotten, err error) {
	defer fault.Wrap(&err, "forget source")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		var agent, task *uuid.UUID
		var was *time.Time
		src := &f.Source
		err := tx.QueryRow(ctx, `SELECT key, kind, agent_id, task_id, principal, created_at, forgotten_at
			FROM knowledge_sources WHERE tenant_id = $1 AND key = $2 FOR UPDATE`, tenantID, key).
			Scan(&src.Key, &src.Kind, &agent, &task, &src.Principal, &src.CreatedAt, &was)
		if err != nil {
			return mapErr(err, "source")
		}
		src.AgentID, src.TaskID, f.Already = deref(agent), deref(task), was != nil
		if was == nil {
			err = tx.QueryRow(ctx, `UPDATE knowledge_sources SET forgotten_at = now(), forgotten_by = $3
				WHERE tenant_id = $1 AND key = $2 RETURNING forgotten_at`, tenantID, key, by).Scan(&src.ForgottenAt)
			if err != nil {
				return err
			}
		} else {
			src.ForgottenAt = was
		}
		tag, err := tx.Exec(ctx, `WITH gone AS (
				DELETE FROM memories m USING memory_sources ms
				 WHERE ms.tenant_id = $1 AND ms.source_key = $2 AND m.tenant_id = $1 AND m.id = ms.memory_id
				RETURNING m.id)
			INSERT INTO forgotten_memories (tenant_id, memory_id, source_key)
			SELECT $1, id, $2 FROM gone ON CONFLICT DO NOTHING`, tenantID, key)
		if err != nil {
			return err
		}
		f.Memories = tag.RowsAffected()
		if tag, err = tx.Exec(ctx, `DELETE FROM handoffs WHERE tenant_id = $1 AND source_key = $2`, tenantID, key); err != nil {
			return err
		}
		f.Handoffs = tag.RowsAffected()
		if tag, err = tx.Exec(ctx, `DELETE FROM beliefs WHERE tenant_id = $1 AND source_key = $2`, tenantID, key); err != nil {
			return err
		}
		f.Beliefs = tag.RowsAffected()
		rows, err := tx.Query(ctx, `SELECT `+wikiCols+` FROM wiki_pages WHERE tenant_id = $1 AND host_sources @> ARRAY[$2::text]
			ORDER BY agent_id NULLS FIRST, path LIMIT 1000`, tenantID, key)
		if err != nil {
			return err
		}
		f.Review, err = collectWiki(rows, tenantID)
		for i := range f.Review {
			f.Review[i].Content = "" // listed for review, not shown here
		}
		return err
	})
	return f, err
}
