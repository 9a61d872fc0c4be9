package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/knowledge"
)

// Search implements knowledge.Store: hybrid ranking of full-text matches
// (English stemming; any word of the query may match) and, for a query
// with characters outside the Latin scripts (Japanese, written without
// spaces), of the query's segments found in the text, which the
// character-trigram index answers. The score is the normalised full-text
// rank plus, for each segment a memory holds, a weight that grows with
// the segment's length (longer words say more).
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
		match := []string{"m.tsv @@ q.tq"}
		held := "0"
		if trigrams(q.Text) && len(q.Segments) > 0 {
			var weights []string
			long := slices.ContainsFunc(q.Segments, func(seg string) bool { return utf8.RuneCountInString(seg) >= 3 })
			for _, seg := range q.Segments {
				args = append(args, "%"+likeEscaper.Replace(seg)+"%")
				n := utf8.RuneCountInString(seg)
				// The trigram index answers a pattern of three or more
				// characters; shorter ones only score, unless there are
				// no longer ones.
				if n >= 3 || !long {
					match = append(match, fmt.Sprintf("m.content LIKE $%d", len(args)))
				}
				weights = append(weights, fmt.Sprintf("CASE WHEN m.content LIKE $%d THEN %.3f ELSE 0 END", len(args), float64(min(n, 6))/6))
			}
			held = strings.Join(weights, " + ")
		}
		where = append(where, "("+strings.Join(match, " OR ")+")")
		score = "(coalesce(ts_rank_cd(m.tsv, q.tq, 32), 0) + " + held + ")::float8"
		order = "score DESC, m.created_at DESC, m.id DESC"
	}
	// The ranking reads only columns of memories_rank (an index-only
	// scan of the employee's rows for an English query); the rows shown
	// are fetched afterwards, at most limit of them.
	sql := fmt.Sprintf(`WITH hits AS (
		SELECT m.id, m.created_at, %s AS score
		FROM memories m, (SELECT NULLIF(replace(plainto_tsquery('english', $3)::text, ' & ', ' | '), '')::tsquery AS tq) q
		WHERE %s ORDER BY %s LIMIT $%d)
		SELECT %s, h.score %s JOIN hits h ON h.id = m.id
		WHERE m.tenant_id = $1 ORDER BY h.score DESC, h.created_at DESC, h.id DESC`,
		score, strings.Join(where, " AND "), order, lim, memoryCols, memoryFrom)
	rows, err := s.db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []knowledge.Hit{}
	for rows.Next() {
		var h knowledge.Hit
		if h.Memory, err = scanMemory(rows, tenantID, &h.Score); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// likeEscaper makes a segment match itself in a LIKE pattern.
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

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
