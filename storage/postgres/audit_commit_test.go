package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
)

// startedAuditLog is newAuditLog with the time a commit runs before another
// may start beside it.
func startedAuditLog(t *testing.T, slowAfter time.Duration) (*postgres.AuditLog, auditEnv) {
	env := newAuditEnv(t)
	l := postgres.NewAuditLog(env.db, 4, discardLogger())
	l.SetSlowAfter(slowAfter)
	require.NoError(t, l.Start(context.Background()))
	t.Cleanup(l.Stop)
	return l, env
}

// blockedCommit records a row whose commit cannot finish until release is
// called: another transaction holds an uncommitted row with the same key,
// so the writer's insert waits for it. It returns once the writer waits,
// and the channel carries the row's answer.
func blockedCommit(t *testing.T, l *postgres.AuditLog, env auditEnv, tenant uuid.UUID) (answer <-chan error, release func()) {
	t.Helper()
	ctx := context.Background()
	e := entry(tenant, "slow", audit.OutcomeOK)
	tx, err := env.db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO audit_events (tenant_id, id, at, principal_kind, principal_id, tool, outcome, event_type)
		VALUES ($1, $2, now(), 'employee', 'agent:x', 'slow', 'pending', 'tool_call')`, tenant, e.ID)
	require.NoError(t, err)
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	t.Cleanup(release)
	ch := make(chan error, 1)
	go func() { ch <- l.Record(ctx, e) }()
	require.Eventually(t, func() bool {
		var n int
		err := env.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'visor-audit' AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n == 1
	}, 30*time.Second, 5*time.Millisecond, "the writer waits for the other transaction")
	return ch, release
}

// recordAll records n rows of tenant from n goroutines and sends each
// answer on the returned channel.
func recordAll(l *postgres.AuditLog, tenant uuid.UUID, n int) <-chan error {
	answers := make(chan error, n)
	for range n {
		go func() { answers <- l.Record(context.Background(), entry(tenant, "agent_status", audit.OutcomeOK)) }()
	}
	return answers
}

// TestAuditRowsArrivingDuringACommitShareTheNext: while one commit is in
// flight, rows handed in wait for it and then go together in one commit
// (group commit), rather than each starting a commit of its own beside it.
func TestAuditRowsArrivingDuringACommitShareTheNext(t *testing.T) {
	t.Parallel()
	l, env := startedAuditLog(t, time.Hour)
	first, release := blockedCommit(t, l, env, env.a.ID)
	const n = 20
	answers := recordAll(l, env.b.ID, n)
	select {
	case err := <-answers:
		t.Fatalf("a row was answered (%v) while the commit before it was still in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.Zero(t, l.Commits())
	require.Eventually(t, func() bool { return l.Waiting() == n }, 30*time.Second, time.Millisecond, "every row handed in")
	release()
	require.NoError(t, <-first)
	for range n {
		require.NoError(t, <-answers)
	}
	require.EqualValues(t, 2, l.Commits(), "the blocked commit, then one for every row that waited")
	got, err := l.List(context.Background(), env.b.ID, audit.Filter{Limit: 100})
	require.NoError(t, err)
	require.Len(t, got, n)
}

// TestAuditSlowCommitHoldsUpNobodyForLong: a commit that cannot finish
// (here, waiting for another transaction) lets the rows behind it start a
// commit of their own once it has run for slowAfter, so they are durable
// and answered while it still waits.
func TestAuditSlowCommitHoldsUpNobodyForLong(t *testing.T) {
	t.Parallel()
	l, env := startedAuditLog(t, 20*time.Millisecond)
	first, release := blockedCommit(t, l, env, env.a.ID)
	const n = 20
	answers := recordAll(l, env.b.ID, n)
	for range n {
		select {
		case err := <-answers:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("rows behind a stuck commit were never committed")
		}
	}
	select {
	case err := <-first:
		t.Fatalf("the blocked row was answered (%v) before its transaction could finish", err)
	default:
	}
	got, err := l.List(context.Background(), env.b.ID, audit.Filter{Limit: 100})
	require.NoError(t, err)
	require.Len(t, got, n)
	release()
	require.NoError(t, <-first)
}

// TestAuditStopAnswersEveryRowHandedIn: rows handed in while the log stops
// are each either committed (nil) or refused as the trail shutting down,
// never left waiting; a refused row is not stored, and every row answered
// nil is.
func TestAuditStopAnswersEveryRowHandedIn(t *testing.T) {
	t.Parallel()
	env := newAuditEnv(t)
	l := postgres.NewAuditLog(env.db, 4, discardLogger())
	require.NoError(t, l.Start(context.Background()))
	const n = 400
	type answer struct {
		id  uuid.UUID
		err error
	}
	answers := make(chan answer, n)
	for i := range n {
		go func() {
			e := entry(env.a.ID, "agent_status", audit.OutcomeOK)
			if i == n/2 {
				go l.Stop()
			}
			answers <- answer{e.ID, l.Record(context.Background(), e)}
		}()
	}
	var committed, refused []uuid.UUID
	for range n {
		select {
		case a := <-answers:
			switch {
			case a.err == nil:
				committed = append(committed, a.id)
			case fault.Is(a.err, fault.Unavailable):
				refused = append(refused, a.id)
			default:
				t.Fatalf("unexpected answer: %v", a.err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a row handed in before Stop was never answered")
		}
	}
	l.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.True(t, fault.Is(l.Record(ctx, entry(env.a.ID, "late", audit.OutcomeOK)), fault.Unavailable),
		"a row handed in after Stop is refused at once")
	var stored int
	err := env.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE id = ANY($1)`, committed).Scan(&stored)
	require.NoError(t, err)
	require.Equal(t, len(committed), stored, "every row answered nil is stored")
	err = env.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE id = ANY($1)`, refused).Scan(&stored)
	require.NoError(t, err)
	require.Zero(t, stored, "no refused row is stored")
	t.Logf("%d committed, %d refused as shutting down", len(committed), len(refused))
}

// TestAuditCommitsWhileItsTenantIsBeingChanged: a tenant's settings change
// locks its row for the length of its transaction, and every audit row
// checks its tenant's row (the foreign key). The change's lock leaves the
// key alone, so the audit rows of that tenant — and the batch they share
// with every other tenant's — commit while it is held.
func TestAuditCommitsWhileItsTenantIsBeingChanged(t *testing.T) {
	t.Parallel()
	l, env := newAuditLog(t)
	store := postgres.NewIdentityStore(env.db)
	locked, release := make(chan struct{}), make(chan struct{})
	changed := make(chan error, 1)
	go func() {
		_, _, err := store.UpdateTenant(context.Background(), env.a.ID, func(tn *identity.Tenant) error {
			close(locked)
			<-release
			tn.Name = "Acme renamed"
			return nil
		})
		changed <- err
	}()
	<-locked
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, tenant := range []uuid.UUID{env.a.ID, env.b.ID, env.a.ID} {
		wg.Go(func() { assert.NoError(t, l.Record(ctx, entry(tenant, "agent_status", audit.OutcomeOK))) })
	}
	wg.Wait()
	close(release)
	require.NoError(t, <-changed)
}
