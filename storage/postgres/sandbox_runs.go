package postgres

import (
	"context"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/sandbox"
)

// SandboxRunStore is sandbox.RunLog on Postgres.
type SandboxRunStore struct{ db *DB }

// NewSandboxRunStore returns the store of script runs.
func NewSandboxRunStore(db *DB) *SandboxRunStore { return &SandboxRunStore{db: db} }

var _ sandbox.RunLog = (*SandboxRunStore)(nil)

const sandboxRunCols = `tenant_id, id, principal, agent_id, image, language, state, exit_code, timed_out, oom_killed, on_host,
	run_ms, waited_ms, worker, detail, started_at, ended_at`

// StartRun records r as running and drops the tenant's runs beyond the
// newest sandbox.MaxLogged.
func (s *SandboxRunStore) StartRun(ctx context.Context, r sandbox.Run) (err error) {
	defer fault.Wrap(&err, "log script run %s", r.ID)
	var agent *uuid.UUID
	if r.AgentID != uuid.Nil {
		agent = &r.AgentID
	}
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sandbox_runs (tenant_id, id, principal, agent_id, image, language, state, started_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'running', $7)`, r.TenantID, r.ID, r.Principal, agent, r.Image, string(r.Language), r.StartedAt); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM sandbox_runs WHERE tenant_id = $1 AND (started_at, id) < (
			SELECT started_at, id FROM sandbox_runs WHERE tenant_id = $1 ORDER BY started_at DESC, id DESC OFFSET $2 LIMIT 1)`,
			r.TenantID, sandbox.MaxLogged-1)
		return err
	})
}

// EndRun records how a running run ended; a run already ended stays.
func (s *SandboxRunStore) EndRun(ctx context.Context, r sandbox.Run) (err error) {
	defer fault.Wrap(&err, "log the end of script run %s", r.ID)
	_, err = s.db.Pool.Exec(ctx, `UPDATE sandbox_runs SET state = $3, exit_code = $4, timed_out = $5, oom_killed = $6, on_host = $7,
			run_ms = $8, waited_ms = $9, worker = $10, detail = $11, ended_at = $12
		WHERE tenant_id = $1 AND id = $2 AND state = 'running'`, r.TenantID, r.ID, string(r.State), r.ExitCode, r.TimedOut, r.OOMKilled,
		r.OnHost, max(r.RunMS, 0), max(r.WaitedMS, 0), r.Worker, r.Detail, r.EndedAt)
	return err
}

// Runs lists the tenant's runs, newest first.
func (s *SandboxRunStore) Runs(ctx context.Context, tenantID uuid.UUID, f sandbox.RunFilter) (out []sandbox.Run, err error) {
	defer fault.Wrap(&err, "list script runs")
	q := `SELECT ` + sandboxRunCols + ` FROM sandbox_runs WHERE tenant_id = $1`
	args := []any{tenantID}
	if f.InFlight {
		args = append(args, f.StartedAfter)
		q += ` AND state = 'running' AND started_at > $2`
	}
	if f.After != nil {
		args = append(args, f.After.At, f.After.ID)
		q += ` AND (started_at, id) < ($` + strconv.Itoa(len(args)-1) + `, $` + strconv.Itoa(len(args)) + `)`
	}
	args = append(args, max(f.Limit, 1))
	q += ` ORDER BY started_at DESC, id DESC LIMIT $` + strconv.Itoa(len(args))
	rows, err := s.db.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r sandbox.Run
		var agent *uuid.UUID
		var lang, state string
		if err := rows.Scan(&r.TenantID, &r.ID, &r.Principal, &agent, &r.Image, &lang, &state, &r.ExitCode, &r.TimedOut, &r.OOMKilled,
			&r.OnHost, &r.RunMS, &r.WaitedMS, &r.Worker, &r.Detail, &r.StartedAt, &r.EndedAt); err != nil {
			return nil, err
		}
		if agent != nil {
			r.AgentID = *agent
		}
		r.Language, r.State = sandbox.Language(lang), sandbox.RunState(state)
		out = append(out, r)
	}
	return out, rows.Err()
}
