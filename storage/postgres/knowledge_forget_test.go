package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
)

// TestKnowledgeForgetThenWrite forgets a round: what it stored goes, the
// wiki page it touched is listed and kept, and every later write from it
// is refused with the documented text.
func TestKnowledgeForgetThenWrite(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	r, other := round(f.a, f.agentA), round(f.a, f.agentA)
	m, err := f.svc.StoreMemory(ctx, r, uuid.New(), knowledge.NewMemory{Content: "The customer asked for a refund."})
	require.NoError(t, err)
	_, err = f.svc.RecordProfile(ctx, r, uuid.New(), knowledge.ProfileInput{User: "kenji", Fact: "Kenji reads Japanese only."})
	require.NoError(t, err)
	_, err = f.svc.Handoff(ctx, r, uuid.New(), knowledge.HandoffInput{Note: "refund pending"})
	require.NoError(t, err)
	b, err := f.svc.RecordBelief(ctx, r, uuid.New(), "refunds", "The refund is approved this week.", 0.7)
	require.NoError(t, err)
	page, err := f.svc.WriteWiki(ctx, r, uuid.New(), knowledge.ScopeShared, "customers/refunds", "# Refunds")
	require.NoError(t, err)
	_, err = f.svc.WriteWiki(ctx, other, uuid.New(), knowledge.ScopeShared, "customers/refunds", "# Refunds v2")
	require.NoError(t, err)
	keep, err := f.svc.StoreMemory(ctx, other, uuid.New(), knowledge.NewMemory{Content: "Another conversation."})
	require.NoError(t, err)

	_, err = f.svc.Forget(ctx, r, sourceKey(r))
	require.Equal(t, fault.Forbidden, fault.CodeOf(err), "an employee's credential cannot forget")
	ext := identity.Principal{TenantID: f.a.ID, Kind: identity.KindExternal, ClientID: "c", MemberID: uuid.New()}
	_, err = f.svc.Forget(ctx, ext, sourceKey(r))
	require.Equal(t, fault.Forbidden, fault.CodeOf(err), "nor a third-party client's")
	_, err = f.svc.Forget(ctx, operator(f.a), "round:"+uuid.NewString())
	require.Equal(t, fault.NotFound, fault.CodeOf(err))
	_, err = f.svc.Forget(ctx, operator(f.a), "conversation 12")
	require.Equal(t, fault.Invalid, fault.CodeOf(err))

	fg, err := f.svc.Forget(ctx, operator(f.a), sourceKey(r))
	require.NoError(t, err)
	require.EqualValues(t, 2, fg.Memories)
	require.EqualValues(t, 1, fg.Handoffs)
	require.EqualValues(t, 1, fg.Beliefs)
	require.False(t, fg.Already)
	require.NotNil(t, fg.Source.ForgottenAt)
	require.Len(t, fg.Review, 1, "the page is listed for review")
	require.Equal(t, page.ID, fg.Review[0].ID)
	_, err = f.ks.Wiki(ctx, f.a.ID, uuid.Nil, "customers/refunds")
	require.NoError(t, err, "and never deleted")
	_, err = f.ks.Memory(ctx, f.a.ID, m.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = f.ks.Belief(ctx, f.a.ID, b.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = f.ks.Handoff(ctx, f.a.ID, f.agentA.ID, r.TaskID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = f.ks.Memory(ctx, f.a.ID, keep.ID)
	require.NoError(t, err)

	_, err = f.svc.StoreMemory(ctx, r, uuid.New(), knowledge.NewMemory{Content: "The customer asked for a refund."})
	requireFenced(t, err, "Not stored: the conversation this write comes from was forgotten by the operator (forget by source), so nothing derived from it may be stored again")
	_, err = f.svc.RecordProfile(ctx, r, uuid.New(), knowledge.ProfileInput{User: "kenji", Fact: "again"})
	requireFenced(t, err, knowledge.MsgForgotten)
	_, err = f.svc.Resolve(ctx, r, uuid.New(), knowledge.DecisionInput{Question: "refund?", Choice: "yes"})
	requireFenced(t, err, "Not resolved: the conversation this choice comes from was forgotten by the operator")
	_, err = f.svc.WriteWiki(ctx, r, uuid.New(), knowledge.ScopeOwn, "notes", "x")
	requireFenced(t, err, knowledge.MsgForgotten)
	_, err = f.svc.Handoff(ctx, r, uuid.New(), knowledge.HandoffInput{Note: "x"})
	requireFenced(t, err, knowledge.MsgForgotten)
	_, err = f.svc.RecordBelief(ctx, r, uuid.New(), "refunds", "again", 0.5)
	requireFenced(t, err, knowledge.MsgForgotten)
	require.Zero(t, rows(t, f, `SELECT count(*) FROM memories m JOIN memory_sources s ON s.memory_id = m.id WHERE s.source_key = $1`, sourceKey(r)))

	_, err = f.svc.StoreMemory(ctx, other, uuid.New(), knowledge.NewMemory{Content: "still fine"})
	require.NoError(t, err, "another round writes on")

	again, err := f.svc.Forget(ctx, operator(f.a), sourceKey(r))
	require.NoError(t, err)
	require.True(t, again.Already)
	require.Zero(t, again.Memories)
}

// TestKnowledgeWikiHostSourcesWindow rewrites one page from 25 sources:
// its host_sources keep the newest 20, newest first; a source writing
// again moves to the front without a duplicate; host_sources the writer
// puts in the page are dropped.
func TestKnowledgeWikiHostSourcesWindow(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	var keys []string
	for i := range 25 {
		r := round(f.a, f.agentA)
		keys = append(keys, sourceKey(r))
		content := fmt.Sprintf("---\ntitle: runbook\nhost_sources:\n  - round:%s\n---\nrevision %d", uuid.NewString(), i)
		p, err := f.svc.WriteWiki(ctx, r, uuid.New(), knowledge.ScopeOwn, "ops/runbook", content)
		require.NoError(t, err)
		require.Equal(t, i+1, p.Revision)
	}
	p, err := f.ks.Wiki(ctx, f.a.ID, f.agentA.ID, "ops/runbook")
	require.NoError(t, err)
	require.Len(t, p.HostSources, knowledge.HostSourcesKept)
	for i, k := range p.HostSources {
		require.Equal(t, keys[24-i], k, "newest first")
	}
	require.NotContains(t, p.HostSources, keys[4], "the oldest five dropped out")
	require.Equal(t, "---\ntitle: runbook\n---\nrevision 24", p.Content, "the writer's own host_sources are dropped")

	// keys[10] writes again: it moves to the front, once.
	r10 := round(f.a, f.agentA)
	r10.CredentialID, r10.TaskID = keys[10], uuid.New()
	_, err = f.svc.WriteWiki(ctx, r10, uuid.New(), knowledge.ScopeOwn, "ops/runbook", "v26")
	require.NoError(t, err)
	p, err = f.ks.Wiki(ctx, f.a.ID, f.agentA.ID, "ops/runbook")
	require.NoError(t, err)
	require.Len(t, p.HostSources, 20)
	require.Equal(t, keys[10], p.HostSources[0])
	require.Equal(t, keys[24], p.HostSources[1])
	n := 0
	for _, k := range p.HostSources {
		if k == keys[10] {
			n++
		}
	}
	require.Equal(t, 1, n)

	// Forgetting a source that fell out of the window does not list the page.
	fg, err := f.svc.Forget(ctx, operator(f.a), keys[0])
	require.NoError(t, err)
	require.Empty(t, fg.Review)
	fg, err = f.svc.Forget(ctx, operator(f.a), keys[24])
	require.NoError(t, err)
	require.Len(t, fg.Review, 1)
}
