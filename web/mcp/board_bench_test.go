package mcp

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
)

func ptr[T any](v T) *T { return &v }

// The board benchmarks (docs/benchmarks.md), through the whole endpoint
// with an AI employee's key and a durable audit row per call on real
// Postgres:
//
//	go test ./web/mcp -run '^$' -bench Board -benchtime 2000x -cpu 2
//
// tasks_list runs against a tenant holding 10,000 tasks (and a second
// tenant holding as many), from one client (latency) and from
// benchWorkers clients (throughput). tasks_create is the sustained rate
// of creating tasks, each a transaction with its activity entry and its
// audit row. Timing is reported, never asserted.

const benchTasks = 10_000

// seedTasks writes n tasks into tenant spread over its employees, the
// five statuses and ten tags, created a second apart.
func seedTasks(b *testing.B, s *boardStack, tenant uuid.UUID, agents []uuid.UUID, n int) {
	_, err := s.db.Pool.Exec(context.Background(), `INSERT INTO tasks (tenant_id, id, kind, title, description, status,
			assignee_id, creator_kind, created_by, tags, created_at, updated_at, finished_at)
		SELECT $1, gen_random_uuid(), CASE WHEN g % 20 = 0 THEN 'goal' ELSE 'task' END, 'task ' || g, 'what to do about ' || g,
			(ARRAY['open','in_progress','blocked','done','cancelled'])[1 + g % 5], ($2::uuid[])[1 + g % cardinality($2::uuid[])],
			'operator', 'operator:bench', ARRAY['team-' || (g % 10)], now() - g * interval '1 second', now(),
			CASE WHEN g % 5 IN (3, 4) THEN now() END
		FROM generate_series(1, $3) g`, tenant, agents, n)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.db.Pool.Exec(context.Background(), `ANALYZE tasks`); err != nil {
		b.Fatal(err)
	}
}

func benchBoard(b *testing.B) *boardStack {
	s := newBoardStack(b)
	ctx := context.Background()
	ids := []uuid.UUID{s.agents["ada"].ID, s.agents["bob"].ID, s.agents["cy"].ID}
	seedTasks(b, s, s.tenant.ID, ids, benchTasks)
	other, err := s.ids.CreateTenant(ctx, "globex", "Globex")
	if err != nil {
		b.Fatal(err)
	}
	gil, err := s.ids.CreateAgent(ctx, other.ID, identity.NewAgent{Name: "gil"})
	if err != nil {
		b.Fatal(err)
	}
	seedTasks(b, s, other.ID, []uuid.UUID{gil.ID}, benchTasks)
	return s
}

func BenchmarkBoardTasksList(b *testing.B) {
	s := benchBoard(b)
	var mid board.Task
	if err := s.db.Pool.QueryRow(context.Background(), `SELECT id, created_at FROM tasks WHERE tenant_id = $1
		ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`, s.tenant.ID, benchTasks/2).Scan(&mid.ID, &mid.CreatedAt); err != nil {
		b.Fatal(err)
	}
	cases := []struct{ name, args string }{
		{"first-page", `{}`},
		{"assignee", `{"assignee":"bob"}`},
		{"status", `{"status":"blocked"}`},
		{"tag", `{"tag":"team-7"}`},
		{"page-5000-deep", fmt.Sprintf(`{"cursor":%q}`, board.PositionOf(mid).Cursor())},
		{"limit-100", `{"limit":100}`},
	}
	hdr := modernHeaders("tools/call", "tasks_list")
	for _, c := range cases {
		b.Run(c.name+"/1-client", func(b *testing.B) { loadWith(b, 1, s.url, s.keys["ada"], hdr, callBody(1, "tasks_list", c.args)) })
	}
	// The query alone, for comparison: the store's ListTasks, no HTTP,
	// no audit.
	store := postgres.NewBoardStore(s.db)
	bob := s.agents["bob"].ID
	for _, c := range []struct {
		name string
		f    board.TaskFilter
	}{
		{"first-page", board.TaskFilter{Limit: 50}},
		{"assignee", board.TaskFilter{Assignee: bob, Limit: 50}},
		{"status", board.TaskFilter{Status: board.Blocked, Limit: 50}},
		{"tag", board.TaskFilter{Tag: "team-7", Limit: 50}},
		{"page-5000-deep", board.TaskFilter{After: ptr(board.PositionOf(mid)), Limit: 50}},
		{"limit-100", board.TaskFilter{Limit: 100}},
	} {
		b.Run(c.name+"/store-only", func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				t0 := time.Now()
				if _, err := store.ListTasks(context.Background(), s.tenant.ID, c.f); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
	b.Run("first-page/16-clients", func(b *testing.B) {
		loadWith(b, benchWorkers, s.url, s.keys["ada"], hdr, callBody(1, "tasks_list", `{}`))
	})
}

func BenchmarkBoardTasksCreate(b *testing.B) {
	s := newBoardStack(b)
	hdr := modernHeaders("tools/call", "tasks_create")
	body := callBody(1, "tasks_create", `{"title":"Write the release notes","description":"For v2.","assignee":"me","tags":["docs"]}`)
	for _, workers := range []int{benchWorkers, 1} {
		b.Run(fmt.Sprintf("%d-clients", workers), func(b *testing.B) {
			before := s.count(b, `SELECT count(*) FROM audit_events WHERE tool = 'tasks_create' AND outcome = 'ok'`)
			loadWith(b, workers, s.url, s.keys["ada"], hdr, body)
			// Every answered call left its task and its audit row behind.
			if n := s.count(b, `SELECT count(*) FROM audit_events WHERE tool = 'tasks_create' AND outcome = 'ok'`) - before; n < b.N {
				b.Fatalf("%d calls answered, %d audit rows", b.N, n)
			}
		})
	}
}

func (s *boardStack) count(b *testing.B, q string) int {
	var n int
	if err := s.db.Pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}
