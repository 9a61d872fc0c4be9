package postgres_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
)

// corpus is testdata/knowledge_corpus.json (gen_knowledge_corpus.go):
// one employee's memories in English and Japanese, and queries labelled
// with the memories they should find.
type corpus struct {
	Memories []struct {
		ID      string          `json:"id"`
		Lang    string          `json:"lang"`
		Layer   knowledge.Layer `json:"layer"`
		Content string          `json:"content"`
	} `json:"memories"`
	Queries []struct {
		Lang     string   `json:"lang"`
		Text     string   `json:"text"`
		Relevant []string `json:"relevant"`
	} `json:"queries"`
}

// retrieval is recall@5 and MRR (over the top 5) of one language.
type retrieval struct {
	n             int
	recall5, mrr5 float64
}

// measureRetrieval loads the corpus as f's tenant A employee's memories
// and runs every query through the service's search.
func measureRetrieval(t testing.TB, f knowFixture) map[string]retrieval {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile("testdata/knowledge_corpus.json")
	require.NoError(t, err)
	var c corpus
	require.NoError(t, json.Unmarshal(raw, &c))
	require.GreaterOrEqual(t, len(c.Memories), 250)
	p := round(f.a, f.agentA)
	src, err := knowledge.Derive(ctx, nil, p, uuid.Nil)
	require.NoError(t, err)
	byID := map[uuid.UUID]string{}
	for _, m := range c.Memories {
		mem := knowledge.Memory{TenantID: f.a.ID, ID: uuid.New(), AgentID: f.agentA.ID, Layer: m.Layer, Content: m.Content, Source: src}
		require.NoError(t, f.ks.PutMemory(ctx, &mem))
		byID[mem.ID] = m.ID
	}
	_, err = f.db.Pool.Exec(ctx, `ANALYZE memories`)
	require.NoError(t, err)
	sums := map[string]*retrieval{"en": {}, "ja": {}}
	for _, q := range c.Queries {
		hits, err := f.svc.Search(ctx, p, identity.Tenant{ID: f.a.ID}, knowledge.SearchInput{Text: q.Text, Limit: 5})
		require.NoError(t, err)
		r := sums[q.Lang]
		r.n++
		found := false
		for rank, h := range hits {
			if byID[h.ID] == q.Relevant[0] {
				r.recall5++
				r.mrr5 += 1 / float64(rank+1)
				found = true
				break
			}
		}
		if !found && os.Getenv("VISOR_KNOWLEDGE_MISSES") != "" {
			t.Logf("miss %s: %q %v", q.Relevant[0], q.Text, knowledge.Segments(q.Text))
		}
	}
	out := map[string]retrieval{}
	for lang, r := range sums {
		out[lang] = retrieval{n: r.n, recall5: r.recall5 / float64(r.n), mrr5: r.mrr5 / float64(r.n)}
	}
	return out
}

// TestKnowledgeRetrievalBilingual: on the bilingual corpus, the right
// memory is in the top five for at least 90% of the queries in each
// language.
func TestKnowledgeRetrievalBilingual(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	got := measureRetrieval(t, f)
	for lang, r := range got {
		t.Logf("%s: %d queries, recall@5 %.3f, MRR@5 %.3f", lang, r.n, r.recall5, r.mrr5)
	}
	for lang, r := range got {
		require.Greater(t, r.n, 100, lang)
		require.GreaterOrEqual(t, r.recall5, 0.9, "%s recall@5", lang)
	}
}
