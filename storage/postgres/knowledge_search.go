package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/knowledge"
)

// trigramThreshold is the word similarity (share of the query's character
// trigrams found in one stretch of a memory) a memory needs to match by
// trigrams alone.
const trigramThreshold = "0.3"

// Search implements knowledge.Store: hybrid ranking of full-text matches
// (English stemming; any word of the query may match) and character
// trigram matches, which find text without spaces such as Japanese. The
// trigram arm runs for queries with a character outside Latin scripts,
// where the full-text parser cannot split words; the score is the sum of
// the normalised full-text rank and the trigram word similarity.
func (s *KnowledgeStore) Search(ctx context.Context, tenantID uuid.UUID, q knowledge.Query) (out []knowledge.Hit, err error) {
	args := []any{tenantID, q.Agents, q.Text}
	where := []string{"m.tenant_id = $1", "m.agent_id = ANY($2)"}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if q.Layer != "" {
		add("m.layer = $%d", string(q.Layer))
	}
	if q.SourceKey != "" {
		add("EXISTS (SELECT 1 FROM memory_sources ms WHERE ms.tenant_id = m.tenant_id AND ms.memory_id = m.id AND ms.source_key = $%d)", q.SourceKey)
	}
	if !q.Since.IsZero() {
		add("m.created_at >= $%d", q.Since)
	}
	if !q.Until.IsZero() {
		add("m.created_at < $%d", q.Until)
	}
	args = append(args, q.Limit)
	lim := len(args)
	score, order := "0::float8", "m.created_at DESC, m.id DESC"
	if q.Text != "" {
		match := "m.tsv @@ q.tq"
		if trigrams(q.Text) {
			match = "(m.tsv @@ q.tq OR $3 <% m.content)"
		}
		where = append(where, match)
		score = "(coalesce(ts_rank_cd(m.tsv, q.tq, 32), 0) + CASE WHEN q.trgm THEN word_similarity($3, m.content) ELSE 0 END)::float8"
		order = "score DESC, m.created_at DESC, m.id DESC"
	}
	sql := fmt.Sprintf(`SELECT %s, %s AS score %s,
		(SELECT NULLIF(replace(plainto_tsquery('english', $3)::text, ' & ', ' | '), '')::tsquery AS tq, %t AS trgm) q
		WHERE %s ORDER BY %s LIMIT $%d`,
		memoryCols, score, memoryFrom, trigrams(q.Text), strings.Join(where, " AND "), order, lim)
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('pg_trgm.word_similarity_threshold', `+trigramThreshold+`::text, true)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []knowledge.Hit{}
		for rows.Next() {
			var h knowledge.Hit
			if h.Memory, err = scanMemory(rows, tenantID, &h.Score); err != nil {
				return err
			}
			out = append(out, h)
		}
		return rows.Err()
	})
	return out, err
}

// trigrams reports whether text holds a character the English full-text
// parser cannot split into words (anything past the Latin blocks).
func trigrams(text string) bool {
	for _, r := range text {
		if r >= 0x2E80 {
			return true
		}
	}
	return false
}
