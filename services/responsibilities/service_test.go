package responsibilities_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// fixture is tenant acme with ada and bob in engineering (related) and cy
// in sales, tenant globex with gil, and a clock the test moves.
type fixture struct {
	ctx   context.Context
	db    *postgres.DB
	store *postgres.ResponsibilityStore
	svc   *responsibilities.Service

	mu  sync.Mutex
	now time.Time

	acme, globex        identity.Tenant
	ada, bob, cy, gil   *tools.Subject
	op, ext             *tools.Subject
	adaID, bobID, gilID uuid.UUID
}

func setup(t *testing.T) *fixture {
	t.Helper()
	// The clock starts at half past the current hour: the fixtures' daily
	// schedule ("0 9 * * *") must not fall due because a test ran in the
	// minute before nine and moved the clock a minute on.
	f := &fixture{ctx: context.Background(), db: pgtest.New(t), now: time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)}
	idStore := postgres.NewIdentityStore(f.db)
	ids := identity.NewService(idStore, changes.Discard{}, slog.New(slog.DiscardHandler))
	f.store = postgres.NewResponsibilityStore(f.db)
	f.svc = responsibilities.NewService(f.store, agents.NewDelegation(idStore))
	f.svc.SetClock(f.clock)
	f.svc.SetQuestions(f.store)
	f.svc.SetSchedules(f.store)
	tt := pgtest.TwoTenants(t, f.db)
	f.acme, f.globex = tt.A, tt.B
	employee := func(tn identity.Tenant, name, dept string) *tools.Subject {
		a, err := ids.CreateAgent(f.ctx, tn.ID, identity.NewAgent{Name: name, Department: dept})
		require.NoError(t, err)
		return &tools.Subject{Principal: identity.Principal{TenantID: tn.ID, Kind: identity.KindEmployee, AgentID: a.ID,
			CredentialID: "key:" + name, Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: tn, Agent: &a}
	}
	f.ada, f.bob, f.cy = employee(f.acme, "ada", "eng"), employee(f.acme, "bob", "eng"), employee(f.acme, "cy", "sales")
	f.gil = employee(f.globex, "gil", "eng")
	f.adaID, f.bobID, f.gilID = f.ada.Principal.AgentID, f.bob.Principal.AgentID, f.gil.Principal.AgentID
	f.op = &tools.Subject{Principal: identity.Principal{TenantID: f.acme.ID, Kind: identity.KindOperator, CredentialID: "key:op",
		Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: f.acme}
	f.ext = &tools.Subject{Principal: identity.Principal{TenantID: f.acme.ID, Kind: identity.KindExternal, ClientID: "c1",
		Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: f.acme}
	return f
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// resp creates an active responsibility of owner in acme: windows of one
// day anchored an hour ago, 3 runs and 2 follow-ups per window, a
// five-minute minimum wake interval, stopping in ten days.
func (f *fixture) resp(t *testing.T, owner uuid.UUID, edit ...func(*responsibilities.Responsibility)) responsibilities.Responsibility {
	t.Helper()
	stop := f.clock().Add(10 * 24 * time.Hour)
	r := responsibilities.Responsibility{ID: uuid.New(), TenantID: f.acme.ID, AgentID: owner, Name: "triage", Charter: "triage the inbox",
		Schedule: "0 9 * * *", PeriodSecs: 86400, WindowAnchor: f.clock().Add(-time.Hour), RunLimit: 3, FollowupLimit: 2,
		SpendCapCents: 500, MinWakeIntervalSecs: 300, StopAt: &stop, Status: responsibilities.Active, CreatedBy: "operator:k"}
	for _, e := range edit {
		e(&r)
	}
	require.NoError(t, f.store.CreateResponsibility(f.ctx, &r))
	return r
}

func (f *fixture) openRun(t *testing.T, r responsibilities.Responsibility) responsibilities.Run {
	t.Helper()
	run := responsibilities.Run{ID: uuid.New(), TenantID: r.TenantID, ResponsibilityID: r.ID, Reason: responsibilities.BySchedule}
	require.NoError(t, f.store.OpenRun(f.ctx, &run))
	return run
}

func (f *fixture) operatorChange(t *testing.T, r responsibilities.Responsibility, fn func(*responsibilities.Responsibility)) responsibilities.Responsibility {
	t.Helper()
	up, err := f.store.UpdateResponsibility(f.ctx, r.TenantID, r.ID, func(r *responsibilities.Responsibility) error { fn(r); return nil })
	require.NoError(t, err)
	return up
}

func code(t *testing.T, err error, want responsibilities.Code, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.Equal(t, want, responsibilities.CodeOf(err), "error %v; %v", err, msgAndArgs)
	require.True(t, strings.HasPrefix(fault.Message(err), string(want)+": "), "the message names the code: %q", fault.Message(err))
}

func refused(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	var r *tools.RefusalError
	require.True(t, errors.As(err, &r), "want a refusal, got %v; %v", err, msgAndArgs)
}

func TestReadingFollowsOwnershipAndDelegation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID)
	for who, sub := range map[string]*tools.Subject{"owner": f.ada, "related bob": f.bob, "operator": f.op} {
		sum, err := f.svc.Get(f.ctx, sub, r.ID)
		require.NoError(t, err, who)
		require.Equal(t, r.ID, sum.ID, who)
	}
	for who, sub := range map[string]*tools.Subject{"unrelated cy": f.cy, "external": f.ext} {
		_, err := f.svc.Get(f.ctx, sub, r.ID)
		code(t, err, responsibilities.NotFound, who)
	}
	gil := *f.gil
	_, err := f.svc.Get(f.ctx, &gil, r.ID)
	code(t, err, responsibilities.NotFound, "another tenant's employee")
	_, err = f.svc.Get(f.ctx, f.ada, uuid.New())
	code(t, err, responsibilities.NotFound, "a missing id")

	mine, err := f.svc.Mine(f.ctx, f.ada, 200)
	require.NoError(t, err)
	require.Len(t, mine, 1)
	mine, err = f.svc.Mine(f.ctx, f.bob, 200)
	require.NoError(t, err)
	require.Empty(t, mine, "bob's own list holds only bob's")

	run := f.openRun(t, r)
	cost := int64(120)
	_, err = f.store.CloseRun(f.ctx, r.TenantID, run.ID, &cost)
	require.NoError(t, err)
	run2 := f.openRun(t, r)
	_, err = f.store.CloseRun(f.ctx, r.TenantID, run2.ID, nil)
	require.NoError(t, err)
	sum, err := f.svc.Get(f.ctx, f.ada, r.ID)
	require.NoError(t, err)
	require.Equal(t, 2, sum.Window.Runs)
	require.EqualValues(t, 120, sum.Window.SpendCents)
	require.Equal(t, 1, sum.Window.CostNotCounted, "a run that reported nothing is cost_not_counted")
	require.Nil(t, sum.OpenRun)
}

func TestFollowupRules(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID)
	soon := func(d time.Duration) time.Time { return f.clock().Add(d) }

	_, err := f.svc.Followup(f.ctx, f.ada, r.ID, soon(time.Hour))
	code(t, err, responsibilities.NoOpenOccurrence, "no run is open")
	f.openRun(t, r)

	_, err = f.svc.Followup(f.ctx, f.op, r.ID, soon(time.Hour))
	refused(t, err, "an operator key arms nothing")
	_, err = f.svc.Followup(f.ctx, f.bob, r.ID, soon(time.Hour))
	refused(t, err, "a related employee is not the owner")
	_, err = f.svc.Followup(f.ctx, f.cy, r.ID, soon(time.Hour))
	code(t, err, responsibilities.NotFound, "an unrelated employee")

	_, err = f.svc.Followup(f.ctx, f.ada, r.ID, soon(299*time.Second))
	code(t, err, responsibilities.InvalidDueAt, "closer than min_wake_interval_secs")
	_, err = f.svc.Followup(f.ctx, f.ada, r.ID, r.StopAt.Add(time.Second))
	code(t, err, responsibilities.InvalidDueAt, "after stop_at")

	w, err := f.svc.Followup(f.ctx, f.ada, r.ID, soon(300*time.Second))
	require.NoError(t, err, "exactly min_wake_interval_secs ahead")
	require.Equal(t, soon(300*time.Second), w.DueAt, "never moved")
	_, err = f.svc.Followup(f.ctx, f.ada, r.ID, soon(2*time.Hour))
	code(t, err, responsibilities.AgentFollowupLimit, "a second live wake-up")
	_, err = f.svc.Ask(f.ctx, f.ada, r.ID, responsibilities.NewQuestion{Text: "Ship it?"})
	code(t, err, responsibilities.AgentFollowupLimit, "a question while a follow-up is pending")

	// Pausing bumps the epoch and cancels the pending follow-up.
	r = f.operatorChange(t, r, func(r *responsibilities.Responsibility) { r.Status = responsibilities.Paused })
	require.EqualValues(t, 2, r.Epoch)
	_, err = f.store.LiveWakeup(f.ctx, r.TenantID, r.ID)
	require.True(t, fault.Is(err, fault.NotFound), "pausing cancels the pending follow-up")
	_, err = f.svc.Followup(f.ctx, f.ada, r.ID, soon(time.Hour))
	code(t, err, responsibilities.NotActive)
	_, err = f.svc.Ask(f.ctx, f.ada, r.ID, responsibilities.NewQuestion{Text: "Resume?"})
	code(t, err, responsibilities.NotActive)
	r = f.operatorChange(t, r, func(r *responsibilities.Responsibility) { r.Status = responsibilities.Active })
	_, err = f.svc.Followup(f.ctx, f.ada, r.ID, soon(time.Hour))
	code(t, err, responsibilities.EpochChanged, "the run opened in epoch 1")
}

func TestFollowupsCountAgainstTheWindow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Two runs per window: one opened now, one pending follow-up.
	r := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.RunLimit = 2; r.FollowupLimit = 5 })
	f.openRun(t, r)
	_, err := f.svc.Followup(f.ctx, f.ada, r.ID, f.clock().Add(time.Hour))
	require.NoError(t, err)
	fire(t, f, r)
	_, err = f.svc.Followup(f.ctx, f.ada, r.ID, f.clock().Add(2*time.Hour))
	code(t, err, responsibilities.PeriodOccurrenceLimit, "one run and one fired follow-up's run fill the window")
	_, end := r.Window(f.clock())
	w, err := f.svc.Followup(f.ctx, f.ada, r.ID, end.Add(time.Minute))
	require.NoError(t, err, "the next window has room")
	require.True(t, end.Add(time.Minute).Equal(w.DueAt), "due_at %v", w.DueAt)

	// One follow-up per window for the employee.
	r2 := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.RunLimit = 10; r.FollowupLimit = 1 })
	f.openRun(t, r2)
	_, err = f.svc.Followup(f.ctx, f.ada, r2.ID, f.clock().Add(time.Hour))
	require.NoError(t, err)
	fire(t, f, r2)
	_, err = f.svc.Followup(f.ctx, f.ada, r2.ID, f.clock().Add(3*time.Hour))
	code(t, err, responsibilities.AgentFollowupLimit, "the window's follow-up limit")
}

// fire marks the live wake-up fired and opens the run it causes, as the
// worker will.
func fire(t *testing.T, f *fixture, r responsibilities.Responsibility) {
	t.Helper()
	_, err := f.db.Pool.Exec(f.ctx, `UPDATE responsibility_wakeups SET state = 'fired', settled_at = now()
		WHERE tenant_id = $1 AND responsibility_id = $2 AND state = 'pending'`, r.TenantID, r.ID)
	require.NoError(t, err)
	open, err := f.store.OpenRunOf(f.ctx, r.TenantID, r.ID)
	require.NoError(t, err)
	_, err = f.store.CloseRun(f.ctx, r.TenantID, open.ID, nil)
	require.NoError(t, err)
	f.openRun(t, r)
}

func TestAskRules(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID)
	f.openRun(t, r)
	ask := func(q responsibilities.NewQuestion) (responsibilities.Wakeup, error) {
		return f.svc.Ask(f.ctx, f.ada, r.ID, q)
	}
	dur := func(d time.Duration) *time.Duration { return &d }

	for name, q := range map[string]responsibilities.NewQuestion{
		"empty":                {Text: "  "},
		"1,001 characters":     {Text: strings.Repeat("あ", 1001)},
		"six options":          {Text: "Pick", Options: []string{"a", "b", "c", "d", "e", "f"}},
		"an option too long":   {Text: "Pick", Options: []string{"a", strings.Repeat("x", 1001)}},
		"an empty option":      {Text: "Pick", Options: []string{"a", ""}},
		"a non-positive ttl":   {Text: "Pick", TTL: dur(0)},
		"invalid UTF-8 text":   {Text: "bad \xff"},
		"invalid UTF-8 option": {Text: "ok", Options: []string{"\xff"}},
	} {
		_, err := ask(q)
		code(t, err, responsibilities.InvalidQuestion, name)
	}
	_, err := f.svc.Ask(f.ctx, f.op, r.ID, responsibilities.NewQuestion{Text: "Who?"})
	refused(t, err, "an operator key asks nothing")

	w, err := ask(responsibilities.NewQuestion{Text: strings.Repeat("あ", 1000), Options: []string{"はい", strings.Repeat("y", 1000), "c", "d", "e"}})
	require.NoError(t, err, "1,000 characters and five options of 1,000")
	require.Equal(t, f.clock().Add(24*time.Hour), w.DueAt, "ttl defaults to a day")
	_, err = f.svc.Followup(f.ctx, f.ada, r.ID, f.clock().Add(time.Hour))
	code(t, err, responsibilities.AgentFollowupLimit, "a follow-up while a question is pending")

	// ttl is held between a minute and stop_at.
	for _, c := range []struct {
		ttl  *time.Duration
		stop time.Duration
		want time.Duration
	}{{dur(10 * time.Second), 10 * 24 * time.Hour, time.Minute}, {nil, 2 * time.Hour, 2 * time.Hour}, {dur(time.Hour), 2 * time.Hour, time.Hour}} {
		stop := f.clock().Add(c.stop)
		rr := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.StopAt = &stop })
		f.openRun(t, rr)
		w, err := f.svc.Ask(f.ctx, f.ada, rr.ID, responsibilities.NewQuestion{Text: "ok?", TTL: c.ttl})
		require.NoError(t, err)
		require.Equal(t, f.clock().Add(c.want), w.DueAt, "ttl %v, stop in %v", c.ttl, c.stop)
	}
	stop := f.clock().Add(30 * time.Second)
	rr := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.StopAt = &stop })
	f.openRun(t, rr)
	_, err = f.svc.Ask(f.ctx, f.ada, rr.ID, responsibilities.NewQuestion{Text: "ok?"})
	code(t, err, responsibilities.InvalidQuestion, "stop_at is under a minute away")
	f.advance(time.Minute)
	_, err = f.svc.Followup(f.ctx, f.ada, rr.ID, f.clock().Add(10*time.Minute))
	code(t, err, responsibilities.InvalidDueAt, "past stop_at")
}

// TestFiftyConcurrentWakeupCallsOneWins: follow-ups and questions race for
// one responsibility; exactly one is armed, the others are refused with
// agent_followup_limit.
func TestFiftyConcurrentWakeupCallsOneWins(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.FollowupLimit = 100; r.RunLimit = 100 })
	f.openRun(t, r)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for i := range 50 {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				_, err = f.svc.Followup(f.ctx, f.ada, r.ID, f.clock().Add(time.Duration(i+10)*time.Minute))
			} else {
				_, err = f.svc.Ask(f.ctx, f.ada, r.ID, responsibilities.NewQuestion{Text: "race?"})
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won++
				return
			}
			if responsibilities.CodeOf(err) == responsibilities.AgentFollowupLimit {
				lost++
				return
			}
			t.Errorf("unexpected %v", err)
		})
	}
	wg.Wait()
	require.Equal(t, 1, won)
	require.Equal(t, 49, lost)
	var n int
	require.NoError(t, f.db.Pool.QueryRow(f.ctx, `SELECT count(*) FROM responsibility_wakeups WHERE tenant_id = $1 AND responsibility_id = $2`,
		r.TenantID, r.ID).Scan(&n))
	require.Equal(t, 1, n)
}
