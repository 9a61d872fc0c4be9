package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/sandbox"
)

// TestScriptRunsPage: every member reads the tenant's script runs — who,
// when, image, language, outcome, run time and wait — and the runs in
// flight; 25 a page; a run logged running long ago reads as unknown, not
// in flight; another tenant's runs never show.
func TestScriptRunsPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.agent("ada")
	now := time.Now()
	log := func(tenant uuid.UUID, at time.Time, image string, end func(*sandbox.Run)) {
		r := sandbox.Run{TenantID: tenant, ID: uuid.New(), Principal: "agent:" + ada.ID.String(), AgentID: ada.ID, Image: image,
			Language: sandbox.Shell, StartedAt: at}
		require.NoError(t, e.runs.StartRun(ctx, r))
		if end != nil {
			end(&r)
			ended := at.Add(time.Second)
			r.EndedAt = &ended
			require.NoError(t, e.runs.EndRun(ctx, r))
		}
	}
	for i := range 30 {
		log(e.a.ID, now.Add(-time.Duration(i+10)*time.Minute), fmt.Sprintf("img-%02d", i), func(r *sandbox.Run) {
			r.State, r.ExitCode, r.RunMS, r.WaitedMS, r.Worker = sandbox.RunFinished, 7, 1234, 56, "worker-a"
		})
	}
	log(e.a.ID, now.Add(-5*time.Minute), "img-oom", func(r *sandbox.Run) {
		r.State, r.ExitCode, r.OOMKilled = sandbox.RunFinished, 137, true
	})
	log(e.a.ID, now.Add(-4*time.Minute), "img-down", func(r *sandbox.Run) {
		r.State, r.Detail = sandbox.RunUnavailable, fault.Message(sandbox.Unavailable("no_worker", "img-down", "no sandbox worker is running", nil))
	})
	log(e.a.ID, now.Add(-3*time.Hour-40*time.Minute), "img-orphan", nil)
	log(e.a.ID, now.Add(-time.Second), "img-live", nil)
	log(e.b.ID, now, "globex-image", nil)

	for _, role := range identity.Roles {
		b := e.browser()
		e.signIn(b, role)
		p := b.get("/t/acme/dashboard/sandbox")
		require.Equal(t, http.StatusOK, p.status, p.body)
		require.NotContains(t, p.body, "globex-image")
	}
	b := e.browser()
	e.signIn(b, identity.RoleViewer)
	p := b.get("/t/acme/dashboard/sandbox")
	flight, recent, ok := strings.Cut(p.body, "Recent runs")
	require.True(t, ok)
	require.Contains(t, flight, "img-live")
	require.NotContains(t, flight, "img-orphan", "a running row older than any run can last is not in flight")
	require.Contains(t, recent, "img-live")
	require.Contains(t, recent, "Sandbox unavailable; nothing ran")
	require.Contains(t, recent, "no sandbox worker is running")
	require.Contains(t, recent, "Exit code 137 · out of memory")
	require.Contains(t, recent, "Exit code 7")
	require.Contains(t, recent, "1,234 ms")
	require.Contains(t, recent, "56 ms")
	require.Contains(t, recent, "ada")
	require.Contains(t, recent, "POSIX sh")
	require.Equal(t, 25, strings.Count(recent, "<tr><td>"))
	second := b.get(field(t, nextRE, p.body))
	require.Equal(t, http.StatusOK, second.status)
	require.Equal(t, 34-25, strings.Count(second.body, "<tr><td>"))
	require.Contains(t, second.body, "img-orphan")
	require.Contains(t, second.body, "Unknown: the server running it stopped")
	require.NotContains(t, second.body, "Running now", "in flight shows on the first page only")
	require.Equal(t, http.StatusBadRequest, b.get("/t/acme/dashboard/sandbox?cursor=nonsense").status)
	ja := b.get("/t/acme/dashboard/sandbox", "Accept-Language", "ja").body
	require.Contains(t, ja, "終了コード 137")
	require.Contains(t, ja, "稼働中のサンドボックスワーカーがありません")
	require.Contains(t, ja, `<span lang="en">Script sandbox unavailable (no_worker)`, "the English detail follows, marked as English")
	requireNoServiceEnglish(t, ja, serviceSentences()...)
}
