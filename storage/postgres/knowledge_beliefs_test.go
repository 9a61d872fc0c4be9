package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/knowledge"
)

func TestKnowledgeBeliefSettlements(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	r := round(f.a, f.agentA)
	var ids []uuid.UUID
	for range 31 {
		b, err := f.svc.RecordBelief(ctx, r, uuid.New(), "shipping", "The order ships by Friday.", 0.9)
		require.NoError(t, err)
		ids = append(ids, b.ID)
	}
	b, err := f.svc.SettleOwn(ctx, r, ids[0], true)
	require.NoError(t, err)
	require.Equal(t, knowledge.AgentUnverified, b.SettleSource, "every employee settlement is self-reported")
	require.False(t, b.CountsTowardCalibration())
	_, err = f.svc.SettleOwn(ctx, r, ids[0], false)
	require.Equal(t, fault.Conflict, fault.CodeOf(err), "settled once")
	_, err = f.svc.SettleOwn(ctx, round(f.a, f.agentA), ids[1], true)
	require.NoError(t, err, "another round of the same employee")
	dee, err := f.svc2agent(t, "dee", "")
	require.NoError(t, err)
	_, err = f.svc.SettleOwn(ctx, round(f.a, dee), ids[2], true)
	require.Equal(t, fault.NotFound, fault.CodeOf(err), "another employee's belief")

	st, err := f.svc.StatsFor(ctx, r, "")
	require.NoError(t, err)
	require.Equal(t, knowledge.NoVerified, st.Status)
	require.Equal(t, 31, st.NSubmitted)
	require.Equal(t, 2, st.NSettledAll)

	// The operator's verified path: over a self-report, and on its own.
	for i, id := range ids[1:] {
		v, err := f.svc.SettleVerified(ctx, f.a.ID, id, i%10 != 0, "member:op")
		require.NoError(t, err)
		require.Equal(t, knowledge.PlatformVerified, v.SettleSource)
		require.True(t, v.CountsTowardCalibration())
		if i == 28 {
			st, err = f.svc.StatsFor(ctx, operator(f.a), "ada")
			require.NoError(t, err)
			require.Equal(t, knowledge.Insufficient, st.Status, "29 verified")
		}
	}
	_, err = f.svc.SettleVerified(ctx, f.a.ID, ids[1], false, "member:op")
	require.Equal(t, fault.Conflict, fault.CodeOf(err), "a verified settlement is final")
	st, err = f.svc.StatsFor(ctx, operator(f.a), "ada")
	require.NoError(t, err)
	require.Equal(t, knowledge.Calibrated, st.Status)
	require.Equal(t, 30, st.Verified.N)
	require.Equal(t, 27, st.Verified.Hits) // i = 0, 10, 20 false at 0.9: misses
	require.Equal(t, 1, st.SelfReport.N)
	require.Equal(t, 31, st.NSettledAll)
	require.InDelta(t, 0.9, *st.Verified.HitRate, 1e-12)
	require.InDelta(t, (27*0.01+3*0.81)/30, *st.Verified.MeanBrier, 1e-12)
	require.InDelta(t, 0.0, *st.Verified.Overconfidence, 1e-12)
	_, err = f.svc.StatsFor(ctx, r, "dee")
	require.Equal(t, fault.Forbidden, fault.CodeOf(err))
}

func TestKnowledgeHandoffStored(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	r := round(f.a, f.agentA)
	step := strings.Repeat("次", 5458) + "ab" // with "continue": exactly 16,384 bytes
	h, err := f.svc.Handoff(ctx, r, uuid.New(), knowledge.HandoffInput{Status: knowledge.Continue, NextSteps: []string{step}})
	require.NoError(t, err)
	require.Equal(t, 16384, h.Bytes)
	got, err := f.svc.ReadHandoff(ctx, r, "")
	require.NoError(t, err)
	require.Equal(t, step, got.NextSteps[0], "stored whole")
	require.Equal(t, sourceKey(r), got.Source.Key)

	_, err = f.svc.Handoff(ctx, r, uuid.New(), knowledge.HandoffInput{Status: knowledge.Continue, NextSteps: []string{step + "c"}})
	require.Equal(t, fault.TooLarge, fault.CodeOf(err))
	got, err = f.svc.ReadHandoff(ctx, r, "")
	require.NoError(t, err)
	require.Equal(t, step, got.NextSteps[0], "a refused call changes nothing")

	_, err = f.svc.Handoff(ctx, r, uuid.New(), knowledge.HandoffInput{Task: uuid.NewString(), Note: "x"})
	require.Equal(t, fault.Forbidden, fault.CodeOf(err), "a round hands off only its own task")
	_, err = f.svc.Handoff(ctx, operator(f.a), uuid.New(), knowledge.HandoffInput{Note: "x"})
	require.Equal(t, fault.Forbidden, fault.CodeOf(err))
}

func TestKnowledgeSearchFilters(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	r1, r2 := round(f.a, f.agentA), round(f.a, f.agentA)
	_, err := f.svc.StoreMemory(ctx, r1, uuid.New(), knowledge.NewMemory{Layer: knowledge.Episodic, Content: "We deployed the billing service on Monday."})
	require.NoError(t, err)
	_, err = f.svc.StoreMemory(ctx, r2, uuid.New(), knowledge.NewMemory{Layer: knowledge.Procedural, Content: "To deploy billing, run the release pipeline and watch the error rate."})
	require.NoError(t, err)
	_, err = f.svc.StoreMemory(ctx, r2, uuid.New(), knowledge.NewMemory{Content: "請求サービスのデプロイは月曜日に行いました。"})
	require.NoError(t, err)
	_, err = f.svc.Resolve(ctx, r2, uuid.New(), knowledge.DecisionInput{Question: "Which region hosts billing?", Choice: "Tokyo", Rationale: "latency for customers"})
	require.NoError(t, err)
	search := func(in knowledge.SearchInput) []knowledge.Hit {
		t.Helper()
		hits, err := f.svc.Search(ctx, r1, f.a, in)
		require.NoError(t, err)
		return hits
	}
	hits := search(knowledge.SearchInput{Text: "deploying billing"})
	require.Len(t, hits, 3, "any word may match: the decision names billing only")
	require.ElementsMatch(t, []knowledge.Layer{knowledge.Episodic, knowledge.Procedural}, []knowledge.Layer{hits[0].Layer, hits[1].Layer},
		"stemmed: deploying finds deployed and deploy, which rank first")
	require.Equal(t, knowledge.Decision, hits[2].Layer)
	hits = search(knowledge.SearchInput{Text: "deploy billing", Layer: knowledge.Procedural})
	require.Len(t, hits, 1)
	require.Equal(t, knowledge.Procedural, hits[0].Layer)
	hits = search(knowledge.SearchInput{Text: "billing", Source: sourceKey(r1)})
	require.Len(t, hits, 1)
	require.Equal(t, sourceKey(r1), hits[0].Source.Key, "each result says where it came from")
	require.Equal(t, r1.TaskID, hits[0].Source.TaskID)
	hits = search(knowledge.SearchInput{Text: "請求サービスのデプロイ"})
	require.Len(t, hits, 1, "Japanese without spaces is found")
	require.Contains(t, hits[0].Content, "月曜日")
	hits = search(knowledge.SearchInput{Text: "billing region", Layer: knowledge.Decision})
	require.Len(t, hits, 1)
	require.Equal(t, []string{"Tokyo"}, hits[0].Facts)
	require.Empty(t, search(knowledge.SearchInput{Text: "billing", Since: time.Now().Add(time.Hour)}))
	require.Len(t, search(knowledge.SearchInput{Until: time.Now().Add(time.Hour), Limit: 50}), 4, "no text: newest first")
	_, err = f.svc.Search(ctx, r1, f.a, knowledge.SearchInput{Source: "bogus"})
	require.Equal(t, fault.Invalid, fault.CodeOf(err))
}
