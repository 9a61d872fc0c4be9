package postgres_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/responsibilities"
)

// seedNotice gives tenant A a responsibility whose open run asked a
// question with a queued push.
func seedNotice(t *testing.T, f respFixture) (respRows, responsibilities.Notice) {
	t.Helper()
	ctx := context.Background()
	a := seedResp(t, f)
	settled, err := f.rs.Settle(ctx, f.a.ID, a.wakeup.ID, responsibilities.Cancelled)
	require.NoError(t, err)
	require.True(t, settled)
	now := time.Now()
	q, err := f.rs.Arm(ctx, f.a.ID, a.resp.ID, func(ar responsibilities.Armer) (*responsibilities.Wakeup, error) {
		return &responsibilities.Wakeup{ID: uuid.New(), RunID: a.run.ID, Kind: responsibilities.Question, Epoch: ar.Responsibility.Epoch,
			DueAt: now.Add(time.Hour), Question: "ship?", CreatedBy: "agent:x",
			Notice: &responsibilities.Notice{ID: uuid.New(), State: responsibilities.NoticeQueued, Content: responsibilities.ContentText,
				SendAt: now, CreatedAt: now}}, nil
	})
	require.NoError(t, err)
	return a, *q.Notice
}

var noticeIsolation = map[string]func(t *testing.T, f respFixture, a respRows, n responsibilities.Notice){
	"NoticeTarget": func(t *testing.T, f respFixture, a respRows, n responsibilities.Notice) {
		_, err := f.rs.NoticeTarget(context.Background(), f.b.ID, n.ID)
		notFound(t, err, "NoticeTarget")
	},
	"UpdateNotice": func(t *testing.T, f respFixture, a respRows, n responsibilities.Notice) {
		e := &audit.Entry{ID: uuid.New(), TenantID: f.b.ID, PrincipalKind: "employee", PrincipalID: "agent:x", Outcome: audit.OutcomeOK, At: time.Now()}
		ok, err := f.rs.UpdateNotice(context.Background(), f.b.ID, n.ID, responsibilities.NoticeUpdate{State: responsibilities.NoticeSent,
			SendAt: time.Now(), Attempted: true}, e)
		require.NoError(t, err)
		require.False(t, ok, "UpdateNotice moved tenant A's notice")
	},
	"Notices": func(t *testing.T, f respFixture, a respRows, n responsibilities.Notice) {
		ns, err := f.rs.Notices(context.Background(), f.b.ID, a.resp.ID, nil, 100)
		require.NoError(t, err)
		require.Empty(t, ns, "Notices listed tenant A's notice")
	},
}

// TestEveryNoticeStoreMethodIsTenantIsolated walks the notice store's
// interface by reflection: tenant B reaches none of tenant A's pushes and
// leaves them as they were.
func TestEveryNoticeStoreMethodIsTenantIsolated(t *testing.T) {
	t.Parallel()
	f := respSetup(t)
	it := reflect.TypeFor[responsibilities.NoticeStore]()
	var methods []string
	for i := range it.NumMethod() {
		methods = append(methods, it.Method(i).Name)
	}
	for name := range noticeIsolation {
		require.True(t, slices.Contains(methods, name), "case %s names no method; remove it", name)
	}
	for _, m := range methods {
		t.Run(m, func(t *testing.T) {
			check, ok := noticeIsolation[m]
			require.True(t, ok, "%s has no two-tenant case: add one", m)
			a, n := seedNotice(t, f)
			check(t, f, a, n)
			ctx := context.Background()
			got, err := f.rs.NoticeTarget(ctx, f.a.ID, n.ID)
			require.NoError(t, err)
			require.Equal(t, responsibilities.NoticeQueued, got.Notice.State, "%s changed tenant A's notice", m)
			require.Zero(t, got.Notice.Attempts)
			ns, err := f.rs.Notices(ctx, f.a.ID, a.resp.ID, nil, 10)
			require.NoError(t, err)
			require.Len(t, ns, 1)
		})
	}
}

// TestAChangeWithdrawsLivePushesAndAuditsEach: an operator change cancels
// the pending question and withdraws its queued push in the same
// transaction, with an audit row.
func TestAChangeWithdrawsLivePushesAndAuditsEach(t *testing.T) {
	t.Parallel()
	f := respSetup(t)
	a, n := seedNotice(t, f)
	ctx := context.Background()
	_, err := f.rs.UpdateResponsibility(ctx, f.a.ID, a.resp.ID, func(r *responsibilities.Responsibility) error {
		r.Status = responsibilities.Paused
		return nil
	})
	require.NoError(t, err)
	got, err := f.rs.NoticeTarget(ctx, f.a.ID, n.ID)
	require.NoError(t, err)
	require.Equal(t, responsibilities.NoticeWithdrawn, got.Notice.State)
	require.Equal(t, responsibilities.ReasonSettled, got.Notice.Reason)
	var rows int
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND event_type = $2 AND object = $3`,
		f.a.ID, responsibilities.EventPushWithdrawn, "question:"+n.QuestionID.String()).Scan(&rows))
	require.Equal(t, 1, rows)
}
