package worker_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/worker"
)

// receiver is a runtime's webhook endpoint: it records each delivery with
// its verified id and answers with status().
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	key    []byte
	got    []delivery
	status atomic.Int32
	hold   chan struct{} // when set, requests wait on it before answering
	// onReceive, when set, sees every payload as it arrives.
	onReceive func(rounds.Payload)
}

type delivery struct {
	path     string
	id       string
	verified bool
	payload  rounds.Payload
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{}
	r.status.Store(http.StatusNoContent)
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		id, err := rounds.Verify(r.key, req.Header, body, time.Now())
		d := delivery{path: req.URL.Path, id: req.Header.Get(rounds.HeaderID), verified: err == nil && id != ""}
		_ = json.Unmarshal(body, &d.payload)
		r.got = append(r.got, d)
		if r.onReceive != nil {
			r.onReceive(d.payload)
		}
		hold := r.hold
		r.mu.Unlock()
		if hold != nil {
			<-hold
		}
		code := int(r.status.Load())
		if code == http.StatusTemporaryRedirect {
			w.Header().Set("Location", "https://example.com/")
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setKey(shown string) {
	k, _ := rounds.ParseSecret(shown)
	r.mu.Lock()
	r.key = k
	r.mu.Unlock()
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// roundsEnv is a tenant with two employees, a running job runner with the
// delivery claimers, and the rounds service pushing through the SSRF guard
// (127.0.0.1 allowed, as a development allowlist would).
type roundsEnv struct {
	ctx          context.Context
	db           *postgres.DB
	ids          *identity.Service
	board        *board.Service
	boardStore   *postgres.BoardStore
	store        *postgres.RoundsStore
	svc          *rounds.Service
	minter       *auth.Rounds
	rcv          *receiver
	runner       *worker.Runner
	acme, globex identity.Tenant
	ada, bob     identity.Agent
	gil          identity.Agent
}

func newRoundsEnv(t testing.TB, guarded bool) *roundsEnv {
	t.Helper()
	e := &roundsEnv{ctx: context.Background(), db: pgtest.New(t), rcv: newReceiver(t)}
	log := slog.New(slog.DiscardHandler)
	idStore := postgres.NewIdentityStore(e.db)
	e.ids = identity.NewService(idStore, changes.Discard{}, log)
	e.boardStore = postgres.NewBoardStore(e.db)
	e.store = postgres.NewRoundsStore(e.db)
	e.minter = auth.NewRounds(postgres.NewCredentialStore(e.db), idStore)
	allow := []string{"127.0.0.1"}
	if guarded {
		allow = nil
	}
	e.svc = rounds.NewService(rounds.Config{Store: e.store, Minter: e.minter,
		HTTP:     egress.New(egress.Config{AllowPrivateHosts: allow, RootCAs: rootsOf(e.rcv.srv), Timeout: 2 * time.Second}),
		DevHosts: []string{"127.0.0.1"}, MCPURL: func(slug string) string { return "https://visor.test/t/" + slug + "/mcp" }, Logger: log})
	e.board = board.NewService(board.Deps{Store: e.boardStore, Relations: agents.NewDelegation(idStore), Directory: idStore,
		Staff: e.ids, Rounds: e.svc, Logger: log})
	reg := worker.NewRegistry()
	worker.RegisterRounds(reg, e.svc, worker.RoundsOptions{Attempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	r, err := worker.NewRunner(e.db.Pool, reg, worker.Options{Logger: log, Concurrency: 2})
	require.NoError(t, err)
	require.NoError(t, r.Start(e.ctx))
	t.Cleanup(r.Stop)
	e.runner = r

	tt := pgtest.TwoTenants(t, e.db)
	e.acme, e.globex = tt.A, tt.B
	for _, p := range []struct {
		tn identity.Tenant
		to *identity.Agent
		n  string
	}{{e.acme, &e.ada, "ada"}, {e.acme, &e.bob, "bob"}, {e.globex, &e.gil, "gil"}} {
		*p.to, err = e.ids.CreateAgent(e.ctx, p.tn.ID, identity.NewAgent{Name: p.n})
		require.NoError(t, err)
	}
	return e
}

func rootsOf(s *httptest.Server) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Certificate())
	return p
}

// wake writes a task assigned to agent with one wake-up, as the board does.
func (e *roundsEnv) wake(t *testing.T, tn identity.Tenant, agent uuid.UUID, reason rounds.Reason, data ...rounds.Data) rounds.Wakeup {
	t.Helper()
	tk := board.Task{ID: uuid.New(), TenantID: tn.ID, Kind: board.KindTask, Title: "t", Status: board.Open, AssigneeID: agent,
		CreatorKind: board.ByOperator, CreatedBy: "key:op", Origin: board.Direct, Tags: []string{}}
	w := rounds.New(tn.ID, agent, tk.ID, reason, data...)
	require.NoError(t, e.boardStore.CreateTask(e.ctx, &tk, board.Effects{Wakeups: []rounds.Wakeup{w}}, 0))
	return w
}

func (e *roundsEnv) waitState(t *testing.T, tn identity.Tenant, id uuid.UUID, want rounds.State) rounds.Wakeup {
	t.Helper()
	var w rounds.Wakeup
	require.Eventually(t, func() bool {
		var err error
		w, err = e.svc.Wakeup(e.ctx, tn.ID, id)
		return err == nil && w.State == want
	}, 15*time.Second, 20*time.Millisecond, "wake-up %s never became %s (last %+v)", id, want, w)
	return w
}

// TestPushDeliversSignedWakeupWithRoundToken: a wake-up is pushed to the
// employee's own endpoint (or the tenant's default), signed so the
// receiver verifies it with the secret shown once; its round token
// resolves to the employee with the task bound in.
func TestPushDeliversSignedWakeupWithRoundToken(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	_, defSecret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, e.rcv.srv.URL+"/default")
	require.NoError(t, err)
	ep, bobSecret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, e.bob.ID, e.rcv.srv.URL+"/bob")
	require.NoError(t, err)
	require.NotEqual(t, defSecret, bobSecret)
	require.Equal(t, e.bob.ID, ep.AgentID)

	e.rcv.setKey(bobSecret)
	w := e.wake(t, e.acme, e.bob.ID, rounds.Handoff, rounds.Data{Label: "hand-off packet from ada", Author: "agent:x", Text: `{"goal":"ship"}`})
	got := e.waitState(t, e.acme, w.ID, rounds.Delivered)
	require.Equal(t, 1, got.Attempts)
	require.NotNil(t, got.DeliveredAt)
	d := e.rcv.deliveries()
	require.Len(t, d, 1)
	require.Equal(t, "/bob", d[0].path, "the employee's own endpoint wins over the tenant's")
	require.True(t, d[0].verified, "signed with the secret shown once")
	require.Equal(t, w.ID.String(), d[0].id)
	p := d[0].payload
	require.Equal(t, rounds.Handoff, p.Reason)
	require.Equal(t, w.TaskID, p.TaskID)
	require.Equal(t, "acme", p.Tenant)
	require.Equal(t, "https://visor.test/t/acme/mcp", p.Round.MCPURL)
	require.Equal(t, `{"goal":"ship"}`, p.Data[0].Text)
	require.Contains(t, p.Fenced, `{"goal":"ship"}`)

	pr, err := e.minter.ResolveToken(e.ctx, e.acme, p.Round.Token)
	require.NoError(t, err)
	require.Equal(t, e.bob.ID, pr.AgentID)
	require.Equal(t, w.TaskID, pr.TaskID, "the round token carries its task")
	require.WithinDuration(t, time.Now().Add(time.Hour), p.Round.ExpiresAt, time.Minute)

	// ada has no endpoint of her own: the tenant default.
	e.rcv.setKey(defSecret)
	w2 := e.wake(t, e.acme, e.ada.ID, rounds.Assigned)
	e.waitState(t, e.acme, w2.ID, rounds.Delivered)
	d = e.rcv.deliveries()
	require.Equal(t, "/default", d[1].path)
	require.True(t, d[1].verified)
}

// TestFailedPushesBecomeDeadLetterAndRetry: every attempt carries the same
// webhook-id; after the last one the wake-up is a dead letter, listed and
// retryable; a retry that succeeds delivers it.
func TestFailedPushesBecomeDeadLetterAndRetry(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	_, secret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, e.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e.rcv.setKey(secret)
	e.rcv.status.Store(http.StatusServiceUnavailable)

	w := e.wake(t, e.acme, e.ada.ID, rounds.Assigned)
	dead := e.waitState(t, e.acme, w.ID, rounds.Dead)
	require.Equal(t, 3, dead.Attempts)
	require.Equal(t, "the runtime answered HTTP 503", dead.LastError)
	for _, d := range e.rcv.deliveries() {
		require.Equal(t, w.ID.String(), d.id, "every attempt repeats the id")
	}
	require.Len(t, e.rcv.deliveries(), 3)

	letters, err := e.svc.Wakeups(e.ctx, e.acme.ID, rounds.Filter{State: rounds.Dead})
	require.NoError(t, err)
	require.Len(t, letters, 1)
	require.Equal(t, w.ID, letters[0].ID)
	none, err := e.svc.Wakeups(e.ctx, e.globex.ID, rounds.Filter{State: rounds.Dead})
	require.NoError(t, err)
	require.Empty(t, none, "another tenant's dead letters are not listed")
	_, err = e.svc.Retry(e.ctx, e.globex.ID, w.ID)
	require.True(t, fault.Is(err, fault.NotFound), "another tenant cannot retry it: %v", err)

	e.rcv.status.Store(http.StatusOK)
	_, err = e.svc.Retry(e.ctx, e.acme.ID, w.ID)
	require.NoError(t, err)
	got := e.waitState(t, e.acme, w.ID, rounds.Delivered)
	require.Equal(t, 1, got.Attempts, "a retried dead letter starts its attempts over")
	_, err = e.svc.Retry(e.ctx, e.acme.ID, w.ID)
	require.True(t, fault.Is(err, fault.Conflict), "only a dead letter is retried: %v", err)
	_, err = e.svc.Wakeups(e.ctx, e.acme.ID, rounds.Filter{State: "nope"})
	require.True(t, fault.Is(err, fault.Invalid))
}

// TestPushRefusesPrivateAddressesAndRedirects: without the development
// allowlist, a runtime URL that resolves to a private address is refused
// when dialled, and a redirect is never followed; both are dead letters
// at once. Endpoint URLs are checked when they are set.
func TestPushRefusesPrivateAddressesAndRedirects(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, true)
	_, secret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, e.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e.rcv.setKey(secret)
	w := e.wake(t, e.acme, e.ada.ID, rounds.Assigned)
	got := e.waitState(t, e.acme, w.ID, rounds.Dead)
	require.Equal(t, 1, got.Attempts, "an address refusal is not retried")
	require.Contains(t, got.LastError, "non-public address")
	require.Empty(t, e.rcv.deliveries(), "nothing reached the private address")

	for _, bad := range []struct {
		url  string
		code fault.Code
	}{
		{"http://runtime.example.com/hook", fault.Invalid},
		{"https://user:pw@runtime.example.com/hook", fault.Invalid},
		{"https://runtime.example.com/hook#frag", fault.Invalid},
		{"/relative", fault.Invalid},
		{"https://10.1.2.3/hook", fault.Forbidden},
		{"https://169.254.169.254/latest/meta-data", fault.Forbidden},
		{"https://[::1]/hook", fault.Forbidden},
		{"https://localhost/hook", fault.Forbidden},
	} {
		_, _, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, bad.url)
		require.Equal(t, bad.code, fault.CodeOf(err), "%s: %v", bad.url, err)
	}
	_, _, err = e.svc.SetEndpoint(e.ctx, e.acme.ID, e.gil.ID, "https://runtime.example.com/hook")
	require.True(t, fault.Is(err, fault.NotFound), "another tenant's employee: %v", err)

	// A redirect, with the address allowed.
	e2 := newRoundsEnv(t, false)
	_, secret, err = e2.svc.SetEndpoint(e2.ctx, e2.acme.ID, uuid.Nil, e2.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e2.rcv.setKey(secret)
	e2.rcv.status.Store(http.StatusTemporaryRedirect)
	w = e2.wake(t, e2.acme, e2.ada.ID, rounds.Assigned)
	got = e2.waitState(t, e2.acme, w.ID, rounds.Dead)
	require.Equal(t, 1, got.Attempts)
	require.Contains(t, got.LastError, "redirect")
	require.Len(t, e2.rcv.deliveries(), 1)
}

// TestLongPollHandsOutEachWakeupOnce: without a push endpoint wake-ups
// wait for the runtime's long-poll; concurrent takes hand out each exactly
// once, each with a round token for its task.
func TestLongPollHandsOutEachWakeupOnce(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	const n = 30
	want := map[uuid.UUID]uuid.UUID{}
	for range n {
		w := e.wake(t, e.acme, e.ada.ID, rounds.Message, rounds.Data{Label: "message", Author: "x", Text: "hi"})
		want[w.ID] = w.TaskID
	}
	other := e.wake(t, e.acme, e.bob.ID, rounds.Assigned)
	for id := range want {
		e.waitState(t, e.acme, id, rounds.Ready)
	}
	e.waitState(t, e.acme, other.ID, rounds.Ready)

	var mu sync.Mutex
	got := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				ps, err := e.svc.Take(e.ctx, e.acme.ID, "acme", e.ada.ID, 3)
				if err != nil || len(ps) == 0 {
					return
				}
				mu.Lock()
				for _, p := range ps {
					got[p.ID]++
					pr, err := e.minter.ResolveToken(e.ctx, e.acme, p.Round.Token)
					if err != nil || pr.TaskID != want[p.ID] || pr.AgentID != e.ada.ID {
						t.Errorf("token of %s: %v %+v", p.ID, err, pr)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, got, n, "every wake-up handed out")
	for id, c := range got {
		require.Equal(t, 1, c, "wake-up %s handed out once", id)
	}
	w, err := e.svc.Wakeup(e.ctx, e.acme.ID, other.ID)
	require.NoError(t, err)
	require.Equal(t, rounds.Ready, w.State, "another employee's wake-up stays")
	ps, err := e.svc.Take(e.ctx, e.globex.ID, "globex", e.ada.ID, 10)
	require.NoError(t, err)
	require.Empty(t, ps, "another tenant takes nothing")
}

// TestEndRoundsRevokesTokensAndCancelsPending: when a task's round ends
// its tokens stop resolving and wake-ups not yet delivered are cancelled;
// another employee's round on another task is untouched.
func TestEndRoundsRevokesTokensAndCancelsPending(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	w := e.wake(t, e.acme, e.ada.ID, rounds.Assigned)
	e.waitState(t, e.acme, w.ID, rounds.Ready)
	ps, err := e.svc.Take(e.ctx, e.acme.ID, "acme", e.ada.ID, 1)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	// A second wake-up on the same task, still waiting.
	w2 := rounds.New(e.acme.ID, e.ada.ID, w.TaskID, rounds.Message)
	_, err = e.boardStore.UpdateTask(e.ctx, e.acme.ID, w.TaskID, func(*board.Task) (board.Effects, error) {
		return board.Effects{Wakeups: []rounds.Wakeup{w2}}, nil
	})
	require.NoError(t, err)
	e.waitState(t, e.acme, w2.ID, rounds.Ready)
	keep := e.wake(t, e.acme, e.bob.ID, rounds.Assigned)
	e.waitState(t, e.acme, keep.ID, rounds.Ready)
	kp, err := e.svc.Take(e.ctx, e.acme.ID, "acme", e.bob.ID, 1)
	require.NoError(t, err)

	require.NoError(t, e.svc.EndRounds(e.ctx, e.globex.ID, w.TaskID, uuid.Nil))
	_, err = e.minter.ResolveToken(e.ctx, e.acme, ps[0].Round.Token)
	require.NoError(t, err, "another tenant cannot end the round")

	require.NoError(t, e.svc.EndRounds(e.ctx, e.acme.ID, w.TaskID, uuid.Nil))
	_, err = e.minter.ResolveToken(e.ctx, e.acme, ps[0].Round.Token)
	require.True(t, fault.Is(err, fault.Unauthorized), "the round's token ended with it: %v", err)
	got, err := e.svc.Wakeup(e.ctx, e.acme.ID, w2.ID)
	require.NoError(t, err)
	require.Equal(t, rounds.Cancelled, got.State)
	_, err = e.minter.ResolveToken(e.ctx, e.acme, kp[0].Round.Token)
	require.NoError(t, err, "bob's round on another task goes on")
}

// TestBoardChangesEndRounds: completing a task through the board ends its
// round; a wake-up for a task finished before delivery is cancelled.
func TestBoardChangesEndRounds(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	op := board.Actor{Principal: identity.Principal{TenantID: e.acme.ID, Kind: identity.KindOperator, CredentialID: "key:op",
		Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: e.acme, MCP: true}
	tk, err := e.board.CreateTask(e.ctx, op, board.NewTask{Kind: board.KindTask, Title: "ship", Assignee: e.ada.ID})
	require.NoError(t, err)
	var ps []rounds.Payload
	require.Eventually(t, func() bool {
		ps, err = e.svc.Take(e.ctx, e.acme.ID, "acme", e.ada.ID, 5)
		return err == nil && len(ps) == 1
	}, 10*time.Second, 20*time.Millisecond, "the assignment wakes ada")
	require.Equal(t, rounds.Assigned, ps[0].Reason)
	require.Equal(t, tk.ID, ps[0].TaskID)
	_, err = e.board.Complete(e.ctx, op, tk.ID, "")
	require.NoError(t, err)
	_, err = e.minter.ResolveToken(e.ctx, e.acme, ps[0].Round.Token)
	require.True(t, fault.Is(err, fault.Unauthorized), "completing the task ended the round: %v", err)
}

// TestPollWaitsForAWakeup: a long-poll with nothing pending waits and
// answers with the wake-up that turns ready meanwhile (rung by the
// Postgres notification); with wait 0 it answers at once, empty.
func TestPollWaitsForAWakeup(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	bell := rounds.NewBell()
	e.svc.SetBell(bell)
	l := postgres.NewWakeupListener(e.db, bell, slog.New(slog.DiscardHandler))
	require.NoError(t, l.Start(e.ctx))
	t.Cleanup(l.Stop)

	ps, err := e.svc.Poll(e.ctx, e.acme.ID, "acme", e.ada.ID, 5, 0, nil)
	require.NoError(t, err)
	require.Empty(t, ps)

	type answer struct {
		ps  []rounds.Payload
		err error
	}
	got := make(chan answer, 1)
	go func() {
		ps, err := e.svc.Poll(e.ctx, e.acme.ID, "acme", e.ada.ID, 5, 30*time.Second, nil)
		got <- answer{ps, err}
	}()
	testsignal.Until(t, 10*time.Second, time.Millisecond, "the long-poll waits", func() bool { return bell.Waiting() == 1 })
	w := e.wake(t, e.acme, e.ada.ID, rounds.Reminder, rounds.Data{Label: "reminder", Author: "x", Text: "stand-up"})
	a := <-got
	require.NoError(t, a.err)
	require.Len(t, a.ps, 1)
	require.Equal(t, w.ID, a.ps[0].ID)
	require.Equal(t, rounds.Reminder, a.ps[0].Reason)

	closing := make(chan struct{})
	close(closing)
	ps, err = e.svc.Poll(e.ctx, e.acme.ID, "acme", e.ada.ID, 5, 30*time.Second, closing)
	require.NoError(t, err)
	require.Empty(t, ps, "a closing server answers waiting long-polls at once")
}

// TestRoundsStoreIsolatesTenants: every rounds storage method answers
// another tenant's ids as missing and changes nothing of it.
func TestRoundsStoreIsolatesTenants(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	ep, _, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, e.ada.ID, "https://runtime.example.com/ada")
	require.NoError(t, err)
	w := e.wake(t, e.acme, e.ada.ID, rounds.Assigned)
	_, err = e.svc.Wakeup(e.ctx, e.acme.ID, w.ID)
	require.NoError(t, err)

	g := e.globex.ID
	eps, err := e.store.Endpoints(e.ctx, g)
	require.NoError(t, err)
	require.Empty(t, eps)
	require.True(t, fault.Is(e.store.DeleteEndpoint(e.ctx, g, ep.ID), fault.NotFound))
	_, err = e.store.Wakeup(e.ctx, g, w.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	var holder string
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT coalesce(leased_by, '') FROM wakeups WHERE id = $1`, w.ID).Scan(&holder))
	require.NoError(t, e.store.Record(e.ctx, []rounds.Outcome{{TenantID: g, ID: w.ID, Worker: holder, State: rounds.Cancelled},
		{TenantID: g, ID: w.ID, Worker: holder, Error: "x", Dead: true}}))
	_, err = e.store.Requeue(e.ctx, g, w.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	ws, err := e.store.Wakeups(e.ctx, g, rounds.Filter{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, ws)
	_, err = e.store.EndRounds(e.ctx, g, w.TaskID, uuid.Nil)
	require.NoError(t, err)

	got, err := e.store.Wakeup(e.ctx, e.acme.ID, w.ID)
	require.NoError(t, err)
	require.NotEqual(t, rounds.Cancelled, got.State, "untouched by the other tenant")
	require.NotEqual(t, "x", got.LastError)
	eps, err = e.store.Endpoints(e.ctx, e.acme.ID)
	require.NoError(t, err)
	require.Len(t, eps, 1)
}

// TestPruneWakeupsKeepsDeadLettersAndRecentOnes: the daily prune deletes
// only wake-ups settled more than the retention ago, in every tenant.
func TestPruneWakeupsKeepsDeadLettersAndRecentOnes(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	old := e.wake(t, e.acme, e.ada.ID, rounds.Assigned)
	recent := e.wake(t, e.acme, e.bob.ID, rounds.Assigned)
	dead := e.wake(t, e.globex, e.gil.ID, rounds.Assigned)
	oldGlobex := e.wake(t, e.globex, e.gil.ID, rounds.Message)
	for _, w := range []rounds.Wakeup{old, recent, dead, oldGlobex} {
		e.waitState(t, identity.Tenant{ID: w.TenantID}, w.ID, rounds.Ready)
	}
	_, err := e.db.Pool.Exec(e.ctx, `UPDATE wakeups SET state = CASE WHEN id = $1 THEN 'dead' ELSE 'delivered' END,
		updated_at = CASE WHEN id = $2 THEN now() ELSE now() - interval '31 days' END`, dead.ID, recent.ID)
	require.NoError(t, err)
	w := &worker.PruneWakeupsWorker{Store: e.store, Now: time.Now}
	require.NoError(t, w.Work(e.ctx, nil))
	for _, c := range []struct {
		w    rounds.Wakeup
		kept bool
	}{{old, false}, {recent, true}, {dead, true}, {oldGlobex, false}} {
		_, err := e.store.Wakeup(e.ctx, c.w.TenantID, c.w.ID)
		if c.kept {
			require.NoError(t, err)
		} else {
			require.True(t, fault.Is(err, fault.NotFound), "pruned: %v", err)
		}
	}
}

// TestTwoWorkersDeliverEachWakeupOnce: two worker processes, each with
// its own pool and rounds service, work one burst of wake-ups; their
// deliveries share statements in sets, yet every wake-up reaches the
// runtime exactly once, signed, and mints exactly one round token.
func TestTwoWorkersDeliverEachWakeupOnce(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	_, secret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, e.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e.rcv.setKey(secret)

	// The second worker: a pool, rounds service and runner of its own.
	db, err := postgres.Open(e.ctx, e.db.Pool.Config().ConnString(), func(c *pgxpool.Config) { c.MaxConns = 8 })
	require.NoError(t, err)
	t.Cleanup(db.Close)
	log := slog.New(slog.DiscardHandler)
	idStore := postgres.NewIdentityStore(db)
	svc := rounds.NewService(rounds.Config{Store: postgres.NewRoundsStore(db), Minter: auth.NewRounds(postgres.NewCredentialStore(db), idStore),
		HTTP:     egress.New(egress.Config{AllowPrivateHosts: []string{"127.0.0.1"}, RootCAs: rootsOf(e.rcv.srv), Timeout: 2 * time.Second}),
		DevHosts: []string{"127.0.0.1"}, MCPURL: func(slug string) string { return "https://visor.test/t/" + slug + "/mcp" }, Logger: log})
	reg := worker.NewRegistry()
	worker.RegisterRounds(reg, svc, worker.RoundsOptions{Attempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	r, err := worker.NewRunner(db.Pool, reg, worker.Options{Logger: log})
	require.NoError(t, err)
	require.NoError(t, r.Start(e.ctx))
	t.Cleanup(r.Stop)

	const n = 200
	want := map[string]bool{}
	for i := range n {
		w := e.wake(t, e.acme, []uuid.UUID{e.ada.ID, e.bob.ID}[i%2], rounds.Assigned)
		want[w.ID.String()] = true
	}
	testsignal.Until(t, time.Minute, 20*time.Millisecond, "every wake-up delivered", func() bool {
		var left int
		require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM wakeups WHERE tenant_id = $1 AND state <> 'delivered'`, e.acme.ID).Scan(&left))
		return left == 0
	})
	got := e.rcv.deliveries()
	seen := map[string]int{}
	for _, d := range got {
		require.True(t, d.verified, "every push is signed with the endpoint's secret")
		require.Equal(t, d.id, d.payload.ID.String(), "the webhook-id is the wake-up's id")
		seen[d.id]++
	}
	require.Len(t, got, n, "each wake-up pushed exactly once")
	for id := range want {
		require.Equal(t, 1, seen[id], "wake-up %s", id)
	}
	var tokens, attempts int
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM round_tokens WHERE tenant_id = $1`, e.acme.ID).Scan(&tokens))
	require.Equal(t, n, tokens, "one round token per delivery")
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT sum(attempts) FROM wakeups WHERE tenant_id = $1`, e.acme.ID).Scan(&attempts))
	require.Equal(t, n, attempts, "one attempt each")
	var jobs, leased int
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM river_job WHERE kind = 'deliver_wakeup'`).Scan(&jobs))
	require.Zero(t, jobs, "no job per wake-up")
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM wakeups WHERE tenant_id = $1 AND leased_by IS NOT NULL`, e.acme.ID).Scan(&leased))
	require.Zero(t, leased, "every lease ended with its outcome")
}
