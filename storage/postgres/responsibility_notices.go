package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/validtext"
)

var _ responsibilities.NoticeStore = (*ResponsibilityStore)(nil)

const noticeCols = `tenant_id, id, responsibility_id, question_id, state, reason, content, send_at, attempts, last_error, created_at, settled_at`

func scanNotice(row pgx.Row) (responsibilities.Notice, error) {
	var n responsibilities.Notice
	err := row.Scan(&n.TenantID, &n.ID, &n.ResponsibilityID, &n.QuestionID, &n.State, &n.Reason, &n.Content, &n.SendAt, &n.Attempts,
		&n.LastError, &n.CreatedAt, &n.SettledAt)
	return n, err
}

// pushedNotices counts the responsibility's pushes of questions created
// in [from, to) that count against the cap.
func pushedNotices(ctx context.Context, q querier, tenantID, responsibilityID uuid.UUID, from, to time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM responsibility_notices WHERE tenant_id = $1 AND responsibility_id = $2
		AND state IN ('queued', 'held', 'sent', 'failed') AND created_at >= $3 AND created_at < $4`,
		tenantID, responsibilityID, from, to).Scan(&n)
	return n, err
}

// insertNotice writes the push question w plans, in the question's
// transaction: its row, the audit row of a refusal or a hold, and the job
// that sends it at its time.
func (s *ResponsibilityStore) insertNotice(ctx context.Context, tx pgx.Tx, w responsibilities.Wakeup) error {
	n := w.Notice
	if n == nil {
		return nil
	}
	n.TenantID, n.ResponsibilityID, n.QuestionID = w.TenantID, w.ResponsibilityID, w.ID
	settled := (*time.Time)(nil)
	if !n.Live() {
		settled = &n.CreatedAt
	}
	err := tx.QueryRow(ctx, `INSERT INTO responsibility_notices (tenant_id, id, responsibility_id, question_id, state, reason, content,
			send_at, created_at, settled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING created_at`,
		n.TenantID, n.ID, n.ResponsibilityID, n.QuestionID, n.State, n.Reason, n.Content, n.SendAt, n.CreatedAt, settled).Scan(&n.CreatedAt)
	if err != nil {
		return mapErr(err, "notice")
	}
	if n.State != responsibilities.NoticeQueued {
		if err := recordAuditTx(ctx, tx, responsibilities.NoticeAudit(*n, w, n.CreatedAt)); err != nil {
			return err
		}
	}
	if n.Live() && s.jobs != nil {
		return s.jobs.ArmNoticeTx(ctx, tx, *n)
	}
	return nil
}

// withdrawNotices withdraws the responsibility's live notices (an
// operator change withdrew their questions), auditing each.
func withdrawNotices(ctx context.Context, tx pgx.Tx, tenantID, responsibilityID uuid.UUID) error {
	rows, err := tx.Query(ctx, `UPDATE responsibility_notices n SET state = 'withdrawn', reason = 'question_settled', settled_at = now()
		WHERE tenant_id = $1 AND responsibility_id = $2 AND state IN ('queued', 'held')
		RETURNING `+noticeCols+`, (SELECT created_by FROM responsibility_wakeups w WHERE w.tenant_id = n.tenant_id AND w.id = n.question_id)`,
		tenantID, responsibilityID)
	if err != nil {
		return err
	}
	type withdrawn struct {
		n  responsibilities.Notice
		by string
	}
	ws, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (withdrawn, error) {
		var x withdrawn
		n := &x.n
		err := row.Scan(&n.TenantID, &n.ID, &n.ResponsibilityID, &n.QuestionID, &n.State, &n.Reason, &n.Content, &n.SendAt, &n.Attempts,
			&n.LastError, &n.CreatedAt, &n.SettledAt, &x.by)
		return x, err
	})
	if err != nil {
		return err
	}
	for _, x := range ws {
		q := responsibilities.Wakeup{ID: x.n.QuestionID, CreatedBy: x.by}
		if err := recordAuditTx(ctx, tx, responsibilities.NoticeAudit(x.n, q, *x.n.SettledAt)); err != nil {
			return err
		}
	}
	return nil
}

// recordAuditTx writes one audit row in tx, with the trail's own insert.
func recordAuditTx(ctx context.Context, tx pgx.Tx, e *audit.Entry) error {
	if e == nil {
		return nil
	}
	txt := validtext.Storable
	_, err := tx.Exec(ctx, insertAudit, []uuid.UUID{e.TenantID}, []uuid.UUID{e.ID}, []time.Time{e.At}, []string{txt(e.PrincipalKind)},
		[]string{txt(e.PrincipalID)}, []string{txt(e.Tool)}, []string{txt(e.ArgsDigest)}, []string{txt(e.Outcome)}, []int64{e.Code},
		[]string{txt(e.Event)}, []string{txt(e.Message)}, []int64{e.Latency.Microseconds()}, []string{txt(e.Source)},
		[]string{txt(e.Action)}, []string{txt(e.Object)}, []string{txt(e.Change)})
	return err
}

// NoticeTarget reads what sending a notice needs.
func (s *ResponsibilityStore) NoticeTarget(ctx context.Context, tenantID, id uuid.UUID) (t responsibilities.NoticeTarget, err error) {
	defer fault.Wrap(&err, "read notice")
	if t.Notice, err = scanNotice(s.db.Pool.QueryRow(ctx, `SELECT `+noticeCols+` FROM responsibility_notices
		WHERE tenant_id = $1 AND id = $2`, tenantID, id)); err != nil {
		return t, mapErr(err, "notice")
	}
	if t.Question, err = s.Wakeup(ctx, tenantID, t.Notice.QuestionID); err != nil {
		return t, err
	}
	if t.Responsibility, err = s.Responsibility(ctx, tenantID, t.Notice.ResponsibilityID); err != nil {
		return t, err
	}
	err = s.db.Pool.QueryRow(ctx, `SELECT slug, coalesce(settings->>'time_zone', '') FROM tenants WHERE id = $1`, tenantID).
		Scan(&t.TenantSlug, &t.TimeZone)
	return t, mapErr(err, "tenant")
}

// UpdateNotice moves a live notice to u and writes e in the same
// transaction.
func (s *ResponsibilityStore) UpdateNotice(ctx context.Context, tenantID, id uuid.UUID, u responsibilities.NoticeUpdate, e *audit.Entry) (ok bool, err error) {
	attempted := 0
	if u.Attempted {
		attempted = 1
	}
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE responsibility_notices SET state = $3, reason = $4, send_at = $5, attempts = attempts + $6,
				last_error = left($7, 500), settled_at = CASE WHEN $3 IN ('queued', 'held') THEN NULL ELSE now() END
			WHERE tenant_id = $1 AND id = $2 AND state IN ('queued', 'held')`, tenantID, id, u.State, u.Reason, u.SendAt, attempted, u.Error)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		ok = true
		return recordAuditTx(ctx, tx, e)
	})
	return ok, err
}

// Notices lists a responsibility's notices, newest first.
func (s *ResponsibilityStore) Notices(ctx context.Context, tenantID, responsibilityID uuid.UUID, after *responsibilities.RunPosition, limit int) ([]responsibilities.Notice, error) {
	t, aid := afterOf(after)
	rows, err := s.db.Pool.Query(ctx, `SELECT `+noticeCols+` FROM responsibility_notices WHERE tenant_id = $1 AND responsibility_id = $2
		AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4)) ORDER BY created_at DESC, id DESC LIMIT $5`,
		tenantID, responsibilityID, t, aid, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (responsibilities.Notice, error) { return scanNotice(r) })
}
