package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// BenchmarkListCatalogSize is the cost curve of tools/list against the size
// of the catalog: 6, 96 and 996 tools (the catalog's own four, the two
// bench tools and synthetic ones), one page of up to 1,000 tools, the full endpoint with an agent key, 2026-07-28, one
// client (latency) and eight (throughput), all answered from the cache.
//
//	go test ./web/mcp -run '^$' -bench ListCatalogSize -benchtime 300x
func BenchmarkListCatalogSize(b *testing.B) {
	for _, extra := range []int{0, 90, 990} {
		url, token, _, reg := fullStackWith(b, extra, Options{PageSize: 1000})
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("tools=%d/c%d", len(reg.All()), workers), func(b *testing.B) {
				loadWith(b, workers, url, token, modernHeaders("tools/list", ""), body)
			})
		}
	}
}

// BenchmarkListVisibleSets is the cost curve of tools/list against the
// number of distinct visible sets among a tenant's callers: 10,000 AI
// employees call in turn (each request the next one, so every employee
// recurs only every 10,000 requests), their settings' denied_tools making
// 1, 100 or 10,000 distinct sets of a 26-tool catalog. The endpoint runs
// without auth (a middleware sets the employee per request; credential
// resolution is measured in auth/oauth), 2026-07-28, 8 clients, after one
// round of all 10,000 to fill the caches. Besides req/s and latency it
// reports the live Go heap afterwards (after a collection),
// and the pages the list cache holds then (their number and bytes), and the
// size of one answer.
//
//	go test ./web/mcp -run '^$' -bench ListVisibleSets -benchtime 2000x
func BenchmarkListVisibleSets(b *testing.B) {
	const employees, extra = 10_000, 20
	ctx := context.Background()
	db := pgtest.New(b)
	logger := slog.New(slog.DiscardHandler)
	store := postgres.NewIdentityStore(db)
	ids := identity.NewService(store, changes.Discard{}, logger)
	trail := postgres.NewAuditLog(db, 4, logger)
	if err := trail.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(trail.Stop)
	reg := benchRegistrySized(ids, store, db, extra)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	for _, sets := range []int{1, 100, employees} {
		// One tenant per case: employee i denies the synthetic tools whose
		// bits are set in i % sets.
		t, err := ids.CreateTenant(ctx, fmt.Sprintf("sets%d", sets), "Sets")
		if err != nil {
			b.Fatal(err)
		}
		first, err := ids.CreateAgent(ctx, t.ID, identity.NewAgent{Name: "e00000"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO agents (tenant_id, id, name, department, reports_to, role, budget_cents, capabilities, fork, permissions, settings_version, status)
			SELECT a.tenant_id, gen_random_uuid(), 'e' || lpad(i::text, 5, '0'), a.department, a.reports_to, a.role, a.budget_cents,
				jsonb_set(a.capabilities, '{denied_tools}', (SELECT coalesce(jsonb_agg(format('synthetic_%s', lpad(bit::text, 3, '0'))), '[]')
					FROM generate_series(0, 13) bit WHERE ((i % $3) >> bit) & 1 = 1)),
				a.fork, a.permissions, a.settings_version, a.status
			FROM agents a, generate_series(1, $2 - 1) i WHERE a.id = $1`, first.ID, employees, sets); err != nil {
			b.Fatal(err)
		}
		rows, err := db.Pool.Query(ctx, `SELECT id FROM agents WHERE tenant_id = $1 ORDER BY name`, t.ID)
		if err != nil {
			b.Fatal(err)
		}
		var principals []identity.Principal
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				b.Fatal(err)
			}
			principals = append(principals, identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindEmployee,
				AgentID: id, CredentialID: "key-" + id.String(), Scopes: identity.DefaultEmployeeScopes})
		}
		if rows.Err() != nil || len(principals) != employees {
			b.Fatalf("%d employees: %v", len(principals), rows.Err())
		}

		ep := New(reg, tools.NewSubjects(store, tools.NoGrants{}, time.Second), trail, live.NoStreams{}, Options{PageSize: 1000})
		e := echo.New()
		ep.Register(e, func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				i, err := strconv.Atoi(c.Request().Header.Get("X-Bench-Employee"))
				if err != nil || i < 0 || i >= len(principals) {
					return echo.ErrUnauthorized
				}
				c.SetRequest(c.Request().WithContext(identity.WithPrincipal(c.Request().Context(), principals[i])))
				return next(c)
			}
		})
		srv := httptest.NewServer(e)
		url := srv.URL + "/t/" + t.Slug + "/mcp"
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		seen := make([]map[string]bool, 8) // distinct answers, per client
		send := func(w, i int) error {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modernHeaders("tools/list", "") {
				req.Header.Set(k, v)
			}
			req.Header.Set("X-Bench-Employee", strconv.Itoa(i))
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || bytes.Contains(data, []byte(`"error"`)) {
				return fmt.Errorf("status %d: %.300s", resp.StatusCode, data)
			}
			if seen[w] != nil {
				seen[w][string(data)] = true
			}
			return nil
		}
		// Fill the caches with one round of every employee, and count the
		// distinct answers to check the case.
		var next atomic.Int64
		rounds := func(b *testing.B, n int, lat [][]time.Duration) error {
			var wg sync.WaitGroup
			var failed atomic.Pointer[error]
			for w := range 8 {
				wg.Go(func() {
					for {
						k := next.Add(1) - 1
						if k >= int64(n) || failed.Load() != nil {
							return
						}
						t0 := time.Now()
						if err := send(w, int(k%employees)); err != nil {
							failed.Store(&err)
							return
						}
						if lat != nil {
							lat[w] = append(lat[w], time.Since(t0))
						}
					}
				})
			}
			wg.Wait()
			if p := failed.Load(); p != nil {
				return *p
			}
			return nil
		}
		for w := range seen {
			seen[w] = map[string]bool{}
		}
		if err := rounds(b, employees, nil); err != nil {
			b.Fatal(err)
		}
		distinct := map[string]bool{}
		answerBytes := 0
		for w := range seen {
			for k := range seen[w] {
				distinct[k] = true
				answerBytes = len(k)
			}
			seen[w] = nil
		}
		if len(distinct) != sets {
			b.Fatalf("%d distinct answers, want %d", len(distinct), sets)
		}
		distinct = nil // not to count it in the heap
		b.Run(fmt.Sprintf("sets=%d", sets), func(b *testing.B) {
			lat := make([][]time.Duration, 8)
			next.Store(0)
			b.ResetTimer()
			start := time.Now()
			if err := rounds(b, b.N, lat); err != nil {
				b.Fatal(err)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "live-heap-MiB")
			b.ReportMetric(float64(answerBytes)/1024, "answer-KiB")
			b.ReportMetric(float64(ep.lists.pages.len()), "cached-pages")
			b.ReportMetric(float64(ep.lists.pages.size())/(1<<20), "cached-page-MiB")
		})
		srv.Close()
	}
}
