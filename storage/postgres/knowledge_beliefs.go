package postgres

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/knowledge"
)

type handoffBody struct {
	Note      string   `json:"note,omitempty"`
	NextSteps []string `json:"next_steps,omitempty"`
	Evidence  []string `json:"evidence,omitempty"`
	Blocker   string   `json:"blocker,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

// PutHandoff implements knowledge.Store: the newest hand-off replaces the
// one before it.
func (s *KnowledgeStore) PutHandoff(ctx context.Context, h *knowledge.Handoff) (err error) {
	defer fault.Wrap(&err, "store hand-off")
	body, err := json.Marshal(handoffBody{h.Note, h.NextSteps, h.Evidence, h.Blocker, h.Truncated})
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := putSource(ctx, tx, h.TenantID, &h.Source); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `INSERT INTO handoffs (tenant_id, agent_id, task_id, status, body, bytes, source_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (tenant_id, agent_id, task_id) DO UPDATE SET status = EXCLUDED.status, body = EXCLUDED.body,
				bytes = EXCLUDED.bytes, source_key = EXCLUDED.source_key, created_at = now()
			RETURNING created_at`, h.TenantID, h.AgentID, h.TaskID, h.Status, body, h.Bytes, h.Source.Key).Scan(&h.CreatedAt)
		return mapErr(err, "hand-off")
	})
}

// Handoff implements knowledge.Store.
func (s *KnowledgeStore) Handoff(ctx context.Context, tenantID, agentID, taskID uuid.UUID) (knowledge.Handoff, error) {
	h := knowledge.Handoff{TenantID: tenantID, AgentID: agentID, TaskID: taskID}
	var body handoffBody
	var agent, task *uuid.UUID
	err := s.db.Pool.QueryRow(ctx, `SELECT h.status, h.body, h.bytes, h.created_at, s.key, s.kind, s.agent_id, s.task_id, s.principal
		FROM handoffs h JOIN knowledge_sources s ON s.tenant_id = h.tenant_id AND s.key = h.source_key
		WHERE h.tenant_id = $1 AND h.agent_id = $2 AND h.task_id = $3`, tenantID, agentID, taskID).
		Scan(&h.Status, &body, &h.Bytes, &h.CreatedAt, &h.Source.Key, &h.Source.Kind, &agent, &task, &h.Source.Principal)
	if err != nil {
		return knowledge.Handoff{}, mapErr(err, "hand-off")
	}
	h.Source.AgentID, h.Source.TaskID = deref(agent), deref(task)
	h.Note, h.NextSteps, h.Evidence, h.Blocker, h.Truncated = body.Note, body.NextSteps, body.Evidence, body.Blocker, body.Truncated
	return h, nil
}

// PutBelief implements knowledge.Store.
func (s *KnowledgeStore) PutBelief(ctx context.Context, b *knowledge.Belief) (err error) {
	defer fault.Wrap(&err, "record belief")
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := putSource(ctx, tx, b.TenantID, &b.Source); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `INSERT INTO beliefs (tenant_id, id, agent_id, subject, claim, probability, source_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at`,
			b.TenantID, b.ID, b.AgentID, b.Subject, b.Claim, b.Probability, b.Source.Key).Scan(&b.CreatedAt)
		return mapErr(err, "belief")
	})
}

const beliefCols = `id, agent_id, subject, claim, probability, source_key, created_at, settled_at, outcome, settle_source, settled_by`

func scanBelief(row pgx.Row, tenantID uuid.UUID) (knowledge.Belief, error) {
	b := knowledge.Belief{TenantID: tenantID}
	var how *string
	err := row.Scan(&b.ID, &b.AgentID, &b.Subject, &b.Claim, &b.Probability, &b.Source.Key, &b.CreatedAt, &b.SettledAt, &b.Outcome, &how, &b.SettledBy)
	if how != nil {
		b.SettleSource = knowledge.SettleSource(*how)
	}
	return b, err
}

// Belief implements knowledge.Store.
func (s *KnowledgeStore) Belief(ctx context.Context, tenantID, id uuid.UUID) (knowledge.Belief, error) {
	b, err := scanBelief(s.db.Pool.QueryRow(ctx, `SELECT `+beliefCols+` FROM beliefs WHERE tenant_id = $1 AND id = $2`, tenantID, id), tenantID)
	return b, mapErr(err, "belief")
}

// Settle implements knowledge.Store.
func (s *KnowledgeStore) Settle(ctx context.Context, tenantID, id uuid.UUID, outcome bool, how knowledge.SettleSource, by string) (knowledge.Belief, error) {
	b, err := scanBelief(s.db.Pool.QueryRow(ctx, `UPDATE beliefs SET outcome = $3, settle_source = $4, settled_by = $5, settled_at = now()
		WHERE tenant_id = $1 AND id = $2
		  AND (settle_source IS NULL OR ($4 = 'platform_verified' AND settle_source = 'agent_unverified'))
		RETURNING `+beliefCols, tenantID, id, outcome, string(how), by), tenantID)
	if err == pgx.ErrNoRows {
		if _, gerr := s.Belief(ctx, tenantID, id); gerr != nil {
			return knowledge.Belief{}, gerr
		}
		return knowledge.Belief{}, fault.New(fault.Conflict, "the belief is already settled")
	}
	return b, mapErr(err, "belief")
}

// Beliefs implements knowledge.Store.
func (s *KnowledgeStore) Beliefs(ctx context.Context, tenantID, agentID uuid.UUID, limit int) ([]knowledge.Belief, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+beliefCols+` FROM beliefs WHERE tenant_id = $1 AND agent_id = $2
		ORDER BY created_at DESC, id DESC LIMIT $3`, tenantID, agentID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []knowledge.Belief{}
	for rows.Next() {
		b, err := scanBelief(rows, tenantID)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
