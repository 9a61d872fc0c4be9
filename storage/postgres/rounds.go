package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

// RoundsStore implements rounds.Store: runtime endpoints and the delivery
// state of wake-ups (which the board's writes create).
type RoundsStore struct {
	db *DB
}

var _ rounds.Store = (*RoundsStore)(nil)

// NewRoundsStore returns the rounds store on db.
func NewRoundsStore(db *DB) *RoundsStore { return &RoundsStore{db: db} }

const endpointCols = `id, tenant_id, agent_id, url, created_at, updated_at`

func scanEndpoint(row pgx.Row, extra ...any) (rounds.Endpoint, error) {
	var e rounds.Endpoint
	var agent *uuid.UUID
	err := row.Scan(append([]any{&e.ID, &e.TenantID, &agent, &e.URL, &e.CreatedAt, &e.UpdatedAt}, extra...)...)
	e.AgentID = deref(agent)
	return e, err
}

// PutEndpoint creates or replaces the endpoint of e's scope.
func (s *RoundsStore) PutEndpoint(ctx context.Context, e *rounds.Endpoint, secret []byte) (err error) {
	defer fault.Wrap(&err, "set runtime endpoint")
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if e.AgentID != uuid.Nil {
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2`, e.TenantID, e.AgentID).Scan(&one)
			if err != nil {
				return mapErr(err, "AI employee")
			}
		}
		got, err := scanEndpoint(tx.QueryRow(ctx, `INSERT INTO runtime_endpoints (tenant_id, id, agent_id, url, secret)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant_id, (COALESCE(agent_id, '00000000-0000-0000-0000-000000000000'::uuid)))
			DO UPDATE SET url = EXCLUDED.url, secret = EXCLUDED.secret, updated_at = now()
			RETURNING `+endpointCols, e.TenantID, e.ID, nullable(e.AgentID), e.URL, secret))
		if err != nil {
			return mapErr(err, "runtime endpoint")
		}
		*e = got
		return nil
	})
}

// Endpoints lists the tenant's endpoints, the tenant default first.
func (s *RoundsStore) Endpoints(ctx context.Context, tenantID uuid.UUID) ([]rounds.Endpoint, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+endpointCols+` FROM runtime_endpoints WHERE tenant_id = $1
		ORDER BY agent_id NULLS FIRST, created_at`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (rounds.Endpoint, error) { return scanEndpoint(r) })
}

// DeleteEndpoint deletes one endpoint of the tenant.
func (s *RoundsStore) DeleteEndpoint(ctx context.Context, tenantID, id uuid.UUID) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM runtime_endpoints WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err == nil && tag.RowsAffected() == 0 {
		return fault.New(fault.NotFound, "runtime endpoint not found")
	}
	return err
}

const wakeupCols = `w.tenant_id, w.id, w.agent_id, w.task_id, w.reason, w.data, w.state, w.attempts, w.last_error,
	w.due_at, w.created_at, w.updated_at, w.delivered_at`

func scanWakeup(row pgx.Row, extra ...any) (rounds.Wakeup, error) {
	var w rounds.Wakeup
	var data []byte
	err := row.Scan(append([]any{&w.TenantID, &w.ID, &w.AgentID, &w.TaskID, &w.Reason, &data, &w.State, &w.Attempts, &w.LastError,
		&w.DueAt, &w.CreatedAt, &w.UpdatedAt, &w.DeliveredAt}, extra...)...)
	if err == nil {
		err = json.Unmarshal(data, &w.Data)
	}
	return w, err
}

func collectWakeups(rows pgx.Rows) ([]rounds.Wakeup, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (rounds.Wakeup, error) { return scanWakeup(r) })
}

// Wakeup returns one wake-up of the tenant.
func (s *RoundsStore) Wakeup(ctx context.Context, tenantID, id uuid.UUID) (rounds.Wakeup, error) {
	w, err := scanWakeup(s.db.Pool.QueryRow(ctx, `SELECT `+wakeupCols+` FROM wakeups w WHERE w.tenant_id = $1 AND w.id = $2`, tenantID, id))
	return w, mapErr(err, "wake-up")
}

// Wakeups lists the tenant's wake-ups newest first.
func (s *RoundsStore) Wakeups(ctx context.Context, tenantID uuid.UUID, f rounds.Filter) ([]rounds.Wakeup, error) {
	where, args := []string{"w.tenant_id = $1"}, []any{tenantID}
	add := func(cond string, vs ...any) {
		for _, v := range vs {
			args = append(args, v)
			cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(args)), 1)
		}
		where = append(where, cond)
	}
	if f.State != "" {
		add("w.state = ?", f.State)
	}
	if f.Agent != uuid.Nil {
		add("w.agent_id = ?", f.Agent)
	}
	if f.After != nil {
		add("(w.created_at, w.id) < (?, ?)", f.After.At, f.After.ID)
	}
	args = append(args, f.Limit)
	rows, err := s.db.Pool.Query(ctx, fmt.Sprintf(`SELECT %s FROM wakeups w WHERE %s ORDER BY w.created_at DESC, w.id DESC LIMIT $%d`,
		wakeupCols, strings.Join(where, " AND "), len(args)), args...)
	if err != nil {
		return nil, err
	}
	return collectWakeups(rows)
}

// maxError bounds a stored delivery error.
const maxError = 500

// deliveryError is msg as stored: at most maxError bytes of valid UTF-8.
func deliveryError(msg string) string {
	if len(msg) > maxError {
		msg = msg[:maxError]
	}
	msg = strings.ToValidUTF8(msg, "?")
	if !utf8.ValidString(msg) {
		msg = "delivery failed"
	}
	return msg
}

// Requeue moves a dead letter back to queued, due at once and leased to
// no one, its attempts starting over.
func (s *RoundsStore) Requeue(ctx context.Context, tenantID, id uuid.UUID) (w rounds.Wakeup, err error) {
	defer fault.Wrap(&err, "retry wake-up")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		w, err = scanWakeup(tx.QueryRow(ctx, `UPDATE wakeups w SET state = 'queued', attempts = 0, last_error = '', updated_at = now(),
				next_attempt_at = now(), leased_by = NULL
			WHERE w.tenant_id = $1 AND w.id = $2 AND w.state = 'dead' RETURNING `+wakeupCols, tenantID, id))
		if err == pgx.ErrNoRows {
			cur, err := scanWakeup(tx.QueryRow(ctx, `SELECT `+wakeupCols+` FROM wakeups w WHERE w.tenant_id = $1 AND w.id = $2`, tenantID, id))
			if err != nil {
				return mapErr(err, "wake-up")
			}
			return fault.New(fault.Conflict, "wake-up %s is %s, not a dead letter", id, cur.State)
		}
		return err
	})
	return w, err
}

// Claim hands out ready wake-ups of one employee.
func (s *RoundsStore) Claim(ctx context.Context, tenantID, agentID uuid.UUID, max int, token func(rounds.Wakeup) credentials.RoundToken) (ws []rounds.Wakeup, err error) {
	defer fault.Wrap(&err, "hand out wake-ups")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		// The task is share-locked with its wake-up, so it cannot finish
		// (and end its rounds) before the round token below is stored; a
		// task finishing right now is skipped, and its end cancels the
		// wake-up.
		rows, err := tx.Query(ctx, `SELECT `+wakeupCols+` FROM wakeups w
			JOIN tasks t ON t.tenant_id = w.tenant_id AND t.id = w.task_id
			WHERE w.tenant_id = $1 AND w.agent_id = $2 AND w.state = 'ready' AND t.status NOT IN ('done', 'cancelled')
			ORDER BY w.created_at LIMIT $3 FOR UPDATE OF w SKIP LOCKED FOR SHARE OF t SKIP LOCKED`, tenantID, agentID, max)
		if err != nil {
			return err
		}
		if ws, err = collectWakeups(rows); err != nil || len(ws) == 0 {
			return err
		}
		ids := make([]uuid.UUID, len(ws))
		for i := range ws {
			rt := token(ws[i])
			_, err := tx.Exec(ctx, `INSERT INTO round_tokens (tenant_id, id, agent_id, task_id, scopes, secret_hash, expires_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, rt.TenantID, rt.ID, rt.AgentID, rt.TaskID, rt.Scopes, rt.SecretHash, rt.ExpiresAt)
			if err != nil {
				return mapErr(err, "round token")
			}
			ids[i] = ws[i].ID
			ws[i].State = rounds.HandedOut
		}
		_, err = tx.Exec(ctx, `UPDATE wakeups SET state = 'handed_out', attempts = attempts + 1, updated_at = now(), delivered_at = now()
			WHERE tenant_id = $1 AND id = ANY($2)`, tenantID, ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ws, nil
}

// EndRounds revokes the task's live round tokens and cancels its pending
// wake-ups, for one employee or all.
func (s *RoundsStore) EndRounds(ctx context.Context, tenantID, taskID, agentID uuid.UUID) (n int64, err error) {
	defer fault.Wrap(&err, "end rounds")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE round_tokens SET revoked_at = now()
			WHERE tenant_id = $1 AND task_id = $2 AND ($3::uuid IS NULL OR agent_id = $3)
				AND revoked_at IS NULL AND expires_at > now()`, tenantID, taskID, nullable(agentID))
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `UPDATE wakeups SET state = 'cancelled', updated_at = now()
			WHERE tenant_id = $1 AND task_id = $2 AND ($3::uuid IS NULL OR agent_id = $3) AND state IN ('queued', 'ready')`,
			tenantID, taskID, nullable(agentID))
		return err
	})
	return n, err
}

// PruneWakeups deletes, in every tenant, wake-ups settled (delivered,
// handed out or cancelled) before cutoff. Dead letters stay until retried.
func (s *RoundsStore) PruneWakeups(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM wakeups WHERE state IN ('delivered', 'handed_out', 'cancelled') AND updated_at < $1`, cutoff)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

var _ rounds.LeaseStore = (*RoundsStore)(nil)

// ClaimDue leases up to max due wake-ups to worker in one statement: it
// locks them (skipping rows another claim holds), moves their next
// attempt to the lease's end with the worker's name, and reads what each
// push needs within the wake-up's own tenant. Wake-ups are claimed in
// the order their attempts fell due.
func (s *RoundsStore) ClaimDue(ctx context.Context, worker string, max int, lease time.Duration) ([]rounds.Target, error) {
	rows, err := s.db.Pool.Query(ctx, claimDue, max, worker, lease.Seconds())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []rounds.Target
	for rows.Next() {
		var tg rounds.Target
		var epID, epAgent *uuid.UUID
		var epURL *string
		var epCreated, epUpdated *time.Time
		w, err := scanWakeup(rows, &tg.TenantSlug, &tg.AgentActive, &tg.TaskFinished, &epID, &epAgent, &epURL, &tg.Secret, &epCreated, &epUpdated)
		if err != nil {
			return nil, err
		}
		tg.Wakeup = w
		if epID != nil {
			tg.Endpoint = &rounds.Endpoint{ID: *epID, TenantID: w.TenantID, AgentID: deref(epAgent), URL: *epURL,
				CreatedAt: *epCreated, UpdatedAt: *epUpdated}
		}
		out = append(out, tg)
	}
	return out, rows.Err()
}

// claimDue ($1 the most to claim, $2 the worker, $3 the lease in
// seconds). The due wake-ups are found through wakeups_due (queued, by
// next attempt) and locked; each is then updated where it lies (its ctid,
// which cannot change while the lock is held; the key is checked too, so
// a row that moved is left for the next claim), as a join on the key was
// planned as a hash join over a scan of the whole table. What each joins
// is read through its own LIMIT 1 lookup by primary key, every one within
// the wake-up's tenant: right after a burst of inserts the statistics are
// stale, and a join whose order the planner picks from them scanned a
// tenant's every task per row.
const claimDue = `WITH due AS (
		SELECT ctid, tenant_id, id FROM wakeups
		WHERE state = 'queued' AND next_attempt_at <= now()
		ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED
	), leased AS (
		UPDATE wakeups w SET leased_by = $2, next_attempt_at = now() + make_interval(secs => $3)
		FROM due WHERE w.ctid = due.ctid AND w.tenant_id = due.tenant_id AND w.id = due.id
		RETURNING w.*
	)
	SELECT ` + wakeupCols + `, t.slug, a.status = 'active', k.status IN ('done', 'cancelled'),
			e.id, e.agent_id, e.url, e.secret, e.created_at, e.updated_at
		FROM leased w
		CROSS JOIN LATERAL (SELECT slug FROM tenants t WHERE t.id = w.tenant_id LIMIT 1) t
		CROSS JOIN LATERAL (SELECT status FROM agents a WHERE a.tenant_id = w.tenant_id AND a.id = w.agent_id LIMIT 1) a
		CROSS JOIN LATERAL (SELECT status FROM tasks k WHERE k.tenant_id = w.tenant_id AND k.id = w.task_id LIMIT 1) k
		LEFT JOIN LATERAL (SELECT * FROM runtime_endpoints e WHERE e.tenant_id = w.tenant_id
			AND (e.agent_id = w.agent_id OR e.agent_id IS NULL) ORDER BY e.agent_id NULLS LAST LIMIT 1) e ON true
		ORDER BY w.next_attempt_at, w.due_at`

// AddRoundTokens stores a set of round tokens with one COPY.
func (s *RoundsStore) AddRoundTokens(ctx context.Context, rts []credentials.RoundToken) error {
	if len(rts) == 0 {
		return nil
	}
	_, err := s.db.Pool.CopyFrom(ctx, pgx.Identifier{"round_tokens"},
		[]string{"tenant_id", "id", "agent_id", "task_id", "scopes", "secret_hash", "expires_at"},
		pgx.CopyFromSlice(len(rts), func(i int) ([]any, error) {
			rt := rts[i]
			return []any{rt.TenantID, rt.ID, rt.AgentID, rt.TaskID, rt.Scopes, rt.SecretHash, rt.ExpiresAt}, nil
		}))
	return err
}

// Record records a set of delivery outcomes in one round trip and one
// transaction, each on its wake-up only while it is still queued and
// leased to the outcome's worker, and ends each lease. Each outcome is its
// own update by primary key (recordOutcome).
func (s *RoundsStore) Record(ctx context.Context, outs []rounds.Outcome) error {
	if len(outs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, o := range outs {
		msg := ""
		if o.State == "" && !o.Release {
			msg = deliveryError(o.Error)
		}
		var retry *time.Time
		if !o.Retry.IsZero() {
			retry = &o.Retry
		}
		b.Queue(recordOutcome, o.TenantID, o.ID, string(o.State), msg, o.Dead, o.Worker, retry, o.Release)
	}
	return s.db.Pool.SendBatch(ctx, b).Close()
}

// recordOutcome records one outcome ($3 the state, empty for a failed
// push with $4 its error, $5 whether it is now a dead letter and $7 when
// it is due again; $8 releases the lease with no attempt counted) of the
// lease of worker $6.
//
// The tests are written "(state = 'queued') IS TRUE" so that the planner
// cannot prove from them the predicate of a partial index (wakeups_by_task,
// wakeups_due) and looks the row up by its primary key. Right after a
// burst the statistics say few wake-ups are queued, and it then chose
// wakeups_by_task on the tenant alone and filtered every queued wake-up of
// the tenant for the one wanted: ten thousand rows per outcome, 30 ms
// each, in a burst of ten thousand.
const recordOutcome = `UPDATE wakeups SET updated_at = now(), leased_by = NULL,
		state = CASE WHEN $8 THEN state WHEN $3 <> '' THEN $3 WHEN $5 THEN 'dead' ELSE state END,
		delivered_at = CASE WHEN $8 THEN delivered_at WHEN $3 = 'delivered' THEN now() WHEN $3 <> '' THEN NULL ELSE delivered_at END,
		attempts = attempts + CASE WHEN NOT $8 AND $3 IN ('delivered', '') THEN 1 ELSE 0 END,
		last_error = CASE WHEN NOT $8 AND $3 = '' THEN $4 ELSE last_error END,
		next_attempt_at = CASE WHEN $8 THEN now() WHEN $3 = '' AND NOT $5 THEN coalesce($7, now()) ELSE next_attempt_at END
	WHERE tenant_id = $1 AND id = $2 AND (state = 'queued') IS TRUE AND (leased_by = $6) IS TRUE`
