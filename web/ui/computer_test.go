package ui_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/identity"
)

// stopDriver is a computer.Driver that only records the sessions stopped.
type stopDriver struct {
	mu      sync.Mutex
	stopped []computer.Ref
}

func (d *stopDriver) Start(context.Context, computer.Spec) (string, error) { return "worker-1", nil }
func (d *stopDriver) Do(context.Context, computer.Ref, computer.Action) (computer.Outcome, error) {
	return computer.Outcome{}, nil
}
func (d *stopDriver) Put(context.Context, computer.Ref, computer.File) error { return nil }
func (d *stopDriver) Stop(_ context.Context, r computer.Ref) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = append(d.stopped, r)
	return nil
}

func (d *stopDriver) stops() []computer.Ref {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]computer.Ref(nil), d.stopped...)
}

// liveSession starts a live session of agent in tenant on worker-1.
func (e *env) liveSession(tenant uuid.UUID, agent identity.Agent) computer.Session {
	e.t.Helper()
	ctx := context.Background()
	s := computer.Session{TenantID: tenant, ID: uuid.New(), AgentID: agent.ID, Width: 800, Height: 600, MaxActions: 50,
		StartedAt: time.Now().Add(-time.Minute)}
	require.NoError(e.t, e.cu.CreateSession(ctx, &s))
	require.NoError(e.t, e.cu.MarkLive(ctx, tenant, s.ID, "worker-1"))
	got, err := e.cu.Session(ctx, tenant, s.ID)
	require.NoError(e.t, err)
	return got
}

func tinyPNG(t *testing.T) []byte {
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, 8, 6))))
	return b.Bytes()
}

// TestComputerSessionsPage: every member sees the tenant's sessions and a
// live one's latest masked screenshot, served from its own route with
// no-store; only operators and up are offered, and allowed, to stop one,
// through the service's stop (the worker removes the browser; audited as
// stopComputerSession); another tenant finds nothing.
func TestComputerSessionsPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.agent("ada")
	s := e.liveSession(e.a.ID, ada)
	pic := tinyPNG(t)
	require.NoError(t, e.cu.SaveScreenshot(ctx, e.a.ID, s.ID, computer.Screenshot{PNG: pic, Width: 800, Height: 600, Masked: 2, TakenAt: time.Now()}))
	gone := e.liveSession(e.a.ID, e.agent("bob"))
	_, err := e.cu.EndSession(ctx, e.a.ID, gone.ID, computer.SessionLost, "the worker holding it, or its container, is gone")
	require.NoError(t, err)
	gil, err := e.ids.CreateAgent(ctx, e.b.ID, identity.NewAgent{Name: "gil"})
	require.NoError(t, err)
	theirs := e.liveSession(e.b.ID, gil)

	path := "/t/acme/dashboard/computer/" + s.ID.String()
	for _, role := range identity.Roles {
		b := e.browser()
		e.signIn(b, role)
		list := b.get("/t/acme/dashboard/computer")
		require.Equal(t, http.StatusOK, list.status, list.body)
		require.Contains(t, list.body, ">ada<")
		require.Contains(t, list.body, "0 of 50 used")
		require.Contains(t, list.body, "worker-1")
		require.Contains(t, list.body, "Lost")
		require.Contains(t, list.body, "The worker holding it, or its browser, is gone", "a row stored in English before codes")
		require.NotContains(t, list.body, theirs.ID.String())
		page := b.get(path)
		require.Equal(t, http.StatusOK, page.status, page.body)
		require.Contains(t, page.body, "Sensitive regions painted over: 2.")
		require.Contains(t, page.body, `<img class="shot" src="`+path+`/screenshot" width="800" height="600" alt="The latest masked screenshot of the session of ada">`)
		require.Equal(t, role.Allows(identity.ManageAgents), bytes.Contains([]byte(page.body), []byte(`action="`+path+`/stop"`)), role)
		shot := b.get(path + "/screenshot")
		require.Equal(t, http.StatusOK, shot.status)
		require.Equal(t, "image/png", shot.header.Get("Content-Type"))
		require.Equal(t, "no-store", shot.header.Get("Cache-Control"))
		require.Equal(t, "nosniff", shot.header.Get("X-Content-Type-Options"))
		require.Equal(t, string(pic), shot.body)
	}

	viewer := e.browser()
	e.signIn(viewer, identity.RoleViewer)
	res := viewer.submit(path, path+"/stop", nil)
	require.Equal(t, http.StatusForbidden, res.status)
	require.Empty(t, e.driver.stops())

	other := e.browser()
	e.signInAs(other, "globex", "bob@globex.test")
	for _, p := range []string{"", "/screenshot"} {
		require.Equal(t, http.StatusNotFound, other.get("/t/globex/dashboard/computer/"+s.ID.String()+p).status, p)
	}
	res = other.submit("/t/globex/dashboard/computer", "/t/globex/dashboard/computer/"+s.ID.String()+"/stop", nil)
	require.Equal(t, http.StatusNotFound, res.status)
	require.Empty(t, e.driver.stops())
	got, err := e.cu.Session(ctx, e.a.ID, s.ID)
	require.NoError(t, err)
	require.True(t, got.Open(), "refused stops change nothing")

	op := e.browser()
	e.signIn(op, identity.RoleOperator)
	res = op.submit(path, path+"/stop", nil)
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	require.Equal(t, []computer.Ref{{Tenant: e.a.ID, Session: s.ID, Worker: "worker-1"}}, e.driver.stops(), "the worker removes the browser")
	got, err = e.cu.Session(ctx, e.a.ID, s.ID)
	require.NoError(t, err)
	require.Equal(t, computer.SessionStopped, got.State)
	require.Equal(t, computer.EndByOperator, got.EndReason, "stored as a code")
	require.Equal(t, http.StatusNotFound, op.get(path+"/screenshot").status, "an ended session's picture is gone")
	page := op.get(path)
	require.Contains(t, page.body, "its screenshot is no longer kept")
	require.NotContains(t, page.body, path+"/stop")
	res = op.submit(path, path+"/stop", nil)
	require.Equal(t, http.StatusConflict, res.status)

	var outcomes []string
	for _, r := range e.rows("stopComputerSession") {
		if r.TenantID != e.a.ID {
			continue
		}
		if r.Outcome == audit.OutcomeOK {
			require.Equal(t, "computer_session:"+s.ID.String(), r.Object)
		}
		outcomes = append(outcomes, r.Outcome)
	}
	require.Equal(t, []string{audit.OutcomeRefused, audit.OutcomeOK, audit.OutcomeRejected}, outcomes)
	ja := op.get("/t/acme/dashboard/computer", "Accept-Language", "ja").body
	require.Contains(t, ja, "コンピューター操作セッション")
	require.Contains(t, ja, "セッションを保持していたワーカーまたはブラウザーが失われました")
	require.Contains(t, ja, "オペレーターが停止しました")
	requireNoServiceEnglish(t, ja, serviceSentences()...)
	ja = op.get(path, "Accept-Language", "ja").body
	require.Contains(t, ja, "オペレーターが停止しました")
	requireNoServiceEnglish(t, ja, serviceSentences()...)
}
