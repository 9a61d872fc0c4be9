package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/knowledge"
)

func TestKnowledgeMemoryRecordsItsSource(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	p := round(f.a, f.agentA)
	m, err := f.svc.StoreMemory(ctx, p, uuid.New(), knowledge.NewMemory{Content: "The staging database is refreshed every Sunday.",
		Subject: "staging", Facts: []string{"refresh: Sunday", " staging DB "}, Layer: knowledge.Semantic})
	require.NoError(t, err)
	require.Equal(t, sourceKey(p), m.Source.Key)
	got, err := f.ks.Memory(ctx, f.a.ID, m.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"refresh: Sunday", "staging DB"}, got.Facts)
	require.Equal(t, knowledge.KindRound, got.Source.Kind)
	require.Equal(t, p.TaskID, got.Source.TaskID, "the round's task")
	require.Equal(t, f.agentA.ID, got.Source.AgentID)
	require.Equal(t, 1, rows(t, f, `SELECT count(*) FROM memory_sources WHERE memory_id = $1 AND source_key = $2`, m.ID, sourceKey(p)))

	// Outside a round, an operator's call names the employee and is its own source.
	op := operator(f.a)
	call := uuid.New()
	m2, err := f.svc.StoreMemory(ctx, op, call, knowledge.NewMemory{Agent: "ada", Content: "Ada prefers short status notes."})
	require.NoError(t, err)
	require.Equal(t, "call:"+call.String(), m2.Source.Key)
	require.Equal(t, f.agentA.ID, m2.AgentID)
	_, err = f.svc.StoreMemory(ctx, op, call, knowledge.NewMemory{Content: "x"})
	require.Equal(t, fault.Invalid, fault.CodeOf(err), "a caller that is not an employee names one")
	_, err = f.svc.StoreMemory(ctx, p, uuid.New(), knowledge.NewMemory{Agent: "nobody", Content: "x"})
	require.Equal(t, fault.Forbidden, fault.CodeOf(err), "an employee writes only its own")
	_, err = f.svc.StoreMemory(ctx, p, uuid.New(), knowledge.NewMemory{Content: "x", Layer: knowledge.Profile})
	require.Equal(t, fault.Invalid, fault.CodeOf(err), "profiles have their own tool")
}

// TestKnowledgeWriteIsOneTransaction makes the last statement of a write
// fail (a key fact over the column's limit, past the service's checks):
// neither the memory nor its source row remains.
func TestKnowledgeWriteIsOneTransaction(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	p := round(f.a, f.agentA)
	src, err := knowledge.Derive(ctx, nil, p, uuid.Nil)
	require.NoError(t, err)
	m := knowledge.Memory{TenantID: f.a.ID, ID: uuid.New(), AgentID: f.agentA.ID, Layer: knowledge.Semantic, Content: "c",
		Facts: []string{"ok", strings.Repeat("x", 1001)}, Source: src}
	require.Error(t, f.ks.PutMemory(ctx, &m))
	require.Zero(t, rows(t, f, `SELECT count(*) FROM memories WHERE id = $1`, m.ID))
	require.Zero(t, rows(t, f, `SELECT count(*) FROM memory_facts WHERE memory_id = $1`, m.ID))
	require.Zero(t, rows(t, f, `SELECT count(*) FROM knowledge_sources WHERE key = $1`, src.Key), "the source row rolled back with it")
}

func TestKnowledgeMalformedSourceIsRefusedNotAnonymous(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	p := round(f.a, f.agentA)
	p.CredentialID = "round:not-a-uuid"
	_, err := f.svc.StoreMemory(ctx, p, uuid.New(), knowledge.NewMemory{Content: "x"})
	require.Equal(t, knowledge.MsgMalformed, fault.Message(err))
	_, err = f.svc.WriteWiki(ctx, p, uuid.New(), knowledge.ScopeOwn, "notes", "x")
	require.Equal(t, knowledge.MsgMalformed, fault.Message(err))
	_, err = f.svc.Resolve(ctx, p, uuid.New(), knowledge.DecisionInput{Question: "q", Choice: "c"})
	require.Equal(t, knowledge.MsgMalformed, fault.Message(err))
	require.Zero(t, rows(t, f, `SELECT count(*) FROM knowledge_sources`), "nothing stored, not even as an anonymous call")
	require.Zero(t, rows(t, f, `SELECT count(*) FROM memories`))
}

func TestKnowledgeParents(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	r1, r2, r3 := round(f.a, f.agentA), round(f.a, f.agentA), round(f.a, f.agentA)
	_, err := f.svc.StoreMemory(ctx, r1, uuid.New(), knowledge.NewMemory{Content: "derived", Parents: []string{uuid.NewString()}})
	require.Equal(t, fault.NotFound, fault.CodeOf(err))
	require.Equal(t, "Not stored: a parent memory this write names does not exist", fault.Message(err))
	_, err = f.svc.StoreMemory(ctx, r1, uuid.New(), knowledge.NewMemory{Content: "derived", Parents: []string{"nope"}})
	require.Equal(t, fault.Invalid, fault.CodeOf(err))

	base, err := f.svc.StoreMemory(ctx, r1, uuid.New(), knowledge.NewMemory{Content: "The vendor invoices on the 5th."})
	require.NoError(t, err)
	child, err := f.svc.StoreMemory(ctx, r2, uuid.New(), knowledge.NewMemory{Content: "Pay the vendor by the 10th.", Parents: []string{base.ID.String()}})
	require.NoError(t, err)
	require.Equal(t, 2, rows(t, f, `SELECT count(*) FROM memory_sources WHERE memory_id = $1`, child.ID), "own source and the parent's")
	other, err := f.svc.StoreMemory(ctx, r3, uuid.New(), knowledge.NewMemory{Content: "Unrelated."})
	require.NoError(t, err)

	fg, err := f.svc.Forget(ctx, operator(f.a), sourceKey(r1))
	require.NoError(t, err)
	require.EqualValues(t, 2, fg.Memories, "the memory and the one derived from it")
	_, err = f.ks.Memory(ctx, f.a.ID, child.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = f.ks.Memory(ctx, f.a.ID, other.ID)
	require.NoError(t, err, "another source's memory stays")

	// A later write from a live round that names a forgotten memory as its parent.
	_, err = f.svc.StoreMemory(ctx, r3, uuid.New(), knowledge.NewMemory{Content: "again", Parents: []string{base.ID.String()}})
	requireFenced(t, err, knowledge.MsgForgotten)
	_, err = f.svc.Resolve(ctx, r3, uuid.New(), knowledge.DecisionInput{Question: "pay when", Choice: "10th", Parents: []string{child.ID.String()}})
	requireFenced(t, err, knowledge.MsgDecisionForgotten)
}
