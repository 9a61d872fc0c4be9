package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
	"github.com/visorhq/visor/storage/postgres"
)

// BenchmarkKnowledgeRetrieval reports recall@5 and MRR@5 on the bilingual
// corpus (testdata/knowledge_corpus.json), per language.
//
//	go test ./storage/postgres -run '^$' -bench KnowledgeRetrieval -benchtime 1x
func BenchmarkKnowledgeRetrieval(b *testing.B) {
	f := knowSetup(b)
	var got map[string]retrieval
	for range b.N {
		got = measureRetrieval(b, f)
		b.StopTimer()
		_, err := f.db.Pool.Exec(context.Background(), `DELETE FROM memories`)
		require.NoError(b, err)
		b.StartTimer()
	}
	for _, lang := range []string{"en", "ja"} {
		b.ReportMetric(got[lang].recall5, lang+"-recall@5")
		b.ReportMetric(got[lang].mrr5, lang+"-MRR@5")
	}
}

// bulk is a generator of realistic memories for the load benchmarks.
type bulk struct {
	rng *rand.Rand
}

var (
	bulkEN = []string{
		"%s wants to move the renewal of their %s to %s; %s owns the contract.",
		"The quarterly business review with %s is booked for %s in %s, with %s.",
		"%s complained that the %s logs their staff out every morning.",
		"%s's invoices stopped syncing because their API token for the %s expired in %s; %s rotated it.",
		"To onboard new %s users, export the roster for the %s and upload it by %s; ask %s for access.",
	}
	bulkJA = []string{
		"%sは%sの契約更新を%sに延期したいと連絡してきた。担当は%s。",
		"%sとの四半期レビューは%sについて%sで行う。%sが出席する。",
		"%sから、%sが毎朝ログアウトされるという苦情があった。%sに%sが再現した。",
		"%sの請求書連携が%sのAPIトークン期限切れで%sに止まった。%sが再発行した。",
	}
	bulkProducts = []string{"analytics suite", "payroll module", "inventory app", "support desk", "CRM seats", "data warehouse", "mobile app"}
	bulkMonths   = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	bulkJAWords  = []string{"分析スイート", "給与計算", "在庫管理", "サポートデスク", "データ基盤", "モバイルアプリ", "三月", "七月", "大阪", "福岡", "佐々木さん", "井上さん"}
)

func (g bulk) customer(ja bool) string {
	n := g.rng.IntN(20000)
	if ja {
		return fmt.Sprintf("顧客%05d商事", n)
	}
	return fmt.Sprintf("Customer%05d Ltd", n)
}

func (g bulk) content() string {
	pick := func(xs []string) string { return xs[g.rng.IntN(len(xs))] }
	if g.rng.IntN(2) == 0 {
		return fmt.Sprintf(pick(bulkJA), g.customer(true), pick(bulkJAWords), pick(bulkJAWords), pick(bulkJAWords))
	}
	return fmt.Sprintf(pick(bulkEN), g.customer(false), pick(bulkProducts), pick(bulkMonths), fmt.Sprintf("person%03d", g.rng.IntN(500)))
}

// load COPYs n memories of agents into tenant, each under source (one
// source row per distinct key), with their memory_sources rows.
func loadMemories(b testing.TB, db *postgres.DB, tenant uuid.UUID, agents []uuid.UUID, n int, source func(i int) string) []uuid.UUID {
	b.Helper()
	ctx := context.Background()
	g := bulk{rng: rand.New(rand.NewPCG(uint64(n), 7))}
	ids := make([]uuid.UUID, n)
	keys := map[string]bool{}
	var srcRows [][]any
	for i := range n {
		ids[i] = uuid.New()
		if k := source(i); !keys[k] {
			keys[k] = true
			srcRows = append(srcRows, []any{tenant, k, "round", agents[i%len(agents)], "agent:bench"})
		}
	}
	_, err := db.Pool.CopyFrom(ctx, pgx.Identifier{"knowledge_sources"}, []string{"tenant_id", "key", "kind", "agent_id", "principal"}, pgx.CopyFromRows(srcRows))
	require.NoError(b, err)
	layers := []string{"episodic", "semantic", "procedural"}
	now := time.Now()
	_, err = db.Pool.CopyFrom(ctx, pgx.Identifier{"memories"}, []string{"tenant_id", "id", "agent_id", "layer", "content", "source_key", "created_at"},
		pgx.CopyFromSlice(n, func(i int) ([]any, error) {
			return []any{tenant, ids[i], agents[i%len(agents)], layers[i%3], g.content(), source(i), now.Add(-time.Duration(n-i) * time.Second)}, nil
		}))
	require.NoError(b, err)
	_, err = db.Pool.CopyFrom(ctx, pgx.Identifier{"memory_sources"}, []string{"tenant_id", "memory_id", "source_key"},
		pgx.CopyFromSlice(n, func(i int) ([]any, error) { return []any{tenant, ids[i], source(i)}, nil }))
	require.NoError(b, err)
	_, err = db.Pool.Exec(ctx, `ANALYZE knowledge_sources; ANALYZE memories; ANALYZE memory_sources`)
	require.NoError(b, err)
	return ids
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(d)
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}

// BenchmarkKnowledgeSearchMillion is memory_search over a tenant holding
// 1,000,000 memories (50 employees, 20,000 each; half English, half
// Japanese), bulk-loaded with COPY: the service's search of one
// employee's memories, for English and Japanese queries, with the
// latency p50 and p99 of b.N searches. Loading and indexing take minutes.
//
//	go test ./storage/postgres -run '^$' -bench KnowledgeSearchMillion -benchtime 200x -timeout 60m
func BenchmarkKnowledgeSearchMillion(b *testing.B) {
	var f knowFixture
	if url := os.Getenv("VISOR_KNOWLEDGE_BENCH_DB"); url != "" {
		f = loadedFixture(b, url)
	} else {
		f = knowSetup(b)
		agents := []uuid.UUID{f.agentA.ID}
		for i := 1; i < 50; i++ {
			a, err := f.svc2agent(b, fmt.Sprintf("emp%02d", i), "")
			require.NoError(b, err)
			agents = append(agents, a.ID)
		}
		n := 1_000_000
		start := time.Now()
		loadMemories(b, f.db, f.a.ID, agents, n, func(i int) string { return fmt.Sprintf("round:%08d-0000-4000-8000-000000000000", i/20) })
		b.Logf("loaded %d memories with COPY and their indexes in %s", n, time.Since(start).Round(time.Second))
	}
	ctx := context.Background()
	ada := round(f.a, f.agentA)
	tenant := identity.Tenant{ID: f.a.ID}
	g := bulk{rng: rand.New(rand.NewPCG(1, 2))}
	queries := map[string]func() string{
		"en": func() string {
			return fmt.Sprintf("When does %s renew the %s?", g.customer(false), bulkProducts[g.rng.IntN(len(bulkProducts))])
		},
		"ja": func() string { return g.customer(true) + "の契約更新はいつ？" },
	}
	for _, lang := range []string{"en", "ja"} {
		b.Run(lang, func(b *testing.B) {
			var took []time.Duration
			for range b.N {
				q := queries[lang]()
				t0 := time.Now()
				_, err := f.svc.Search(ctx, ada, tenant, knowledge.SearchInput{Text: q, Limit: 10})
				took = append(took, time.Since(t0))
				require.NoError(b, err)
			}
			p50, p99 := percentiles(took)
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		})
	}
}

// loadedFixture opens a database an earlier run of
// BenchmarkKnowledgeSearchMillion loaded (VISOR_KNOWLEDGE_BENCH_DB; stop
// that run once it logs the load, with SIGKILL, and its database stays),
// so the searches can be measured again without loading for minutes.
func loadedFixture(b *testing.B, url string) knowFixture {
	b.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, url)
	require.NoError(b, err)
	b.Cleanup(db.Close)
	ids := postgres.NewIdentityStore(db)
	f := knowFixture{twoTenants: twoTenants{db: db, store: ids}, ks: postgres.NewKnowledgeStore(db)}
	f.a, err = ids.TenantBySlug(ctx, "acme")
	require.NoError(b, err)
	f.agentA, err = ids.AgentByName(ctx, f.a.ID, "ada")
	require.NoError(b, err)
	f.svc = knowledge.NewService(knowledge.Config{Store: f.ks, Directory: ids})
	return f
}

// BenchmarkKnowledgeStore is memory_store's throughput with a durable
// audit trail: each store is what the MCP endpoint does for the call
// (a pending audit row, the write with its source and key facts in one
// transaction, the completed audit row), from 1 and 16 concurrent
// callers, each its own round.
//
//	go test ./storage/postgres -run '^$' -bench KnowledgeStore -benchtime 4000x
func BenchmarkKnowledgeStore(b *testing.B) {
	f := knowSetup(b)
	ctx := context.Background()
	l := postgres.NewAuditLog(f.db, 4, discardLogger())
	require.NoError(b, l.Start(ctx))
	b.Cleanup(l.Stop)
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range callers {
				p := round(f.a, f.agentA)
				wg.Go(func() {
					g := bulk{rng: rand.New(rand.NewPCG(uint64(next.Load()), 3))}
					for next.Add(1) <= int64(b.N) {
						e := audit.Entry{ID: audit.NewID(), TenantID: f.a.ID, PrincipalKind: "employee", PrincipalID: p.ID(), Tool: "memory_store",
							ArgsDigest: "d", Outcome: audit.OutcomePending, Event: "tool_call", At: time.Now()}
						if err := l.Record(ctx, e); err != nil {
							b.Error(err)
							return
						}
						_, err := f.svc.StoreMemory(ctx, p, e.ID, knowledge.NewMemory{Content: g.content(), Facts: []string{"fact one", "fact two"}})
						if err != nil {
							b.Error(err)
							return
						}
						e.Outcome = audit.OutcomeOK
						if err := l.Record(ctx, e); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "stores/s")
		})
	}
}

// BenchmarkKnowledgeForget is forgetting a source that stored 10,000
// memories (among 100,000 of the tenant): removing them, keeping their
// ids as forgotten and listing the wiki pages that name the source.
//
//	go test ./storage/postgres -run '^$' -bench KnowledgeForget -benchtime 3x
func BenchmarkKnowledgeForget(b *testing.B) {
	f := knowSetup(b)
	ctx := context.Background()
	op := operator(f.a)
	for i := range b.N {
		b.StopTimer()
		key := fmt.Sprintf("round:%08d-0000-4000-8000-000000000000", i)
		other := fmt.Sprintf("round:%08d-0000-4000-8000-000000000001", i)
		loadMemories(b, f.db, f.a.ID, []uuid.UUID{f.agentA.ID}, 100_000, func(j int) string {
			if j%10 == 0 {
				return key
			}
			return other
		})
		b.StartTimer()
		got, err := f.svc.Forget(ctx, op, key)
		require.NoError(b, err)
		require.EqualValues(b, 10_000, got.Memories)
	}
}
