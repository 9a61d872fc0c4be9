package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// BenchmarkAuditRecord is the cost curve of durable audit rows against
// concurrent callers: 1, 8, 64 and 256 goroutines share b.N rows, each
// Record returning once its batch committed, as the MCP endpoint records
// them. It reports rows per second, rows per commit, the Postgres server's
// CPU per row and each caller's wait (p50, p99).
//
//	go test ./storage/postgres -run '^$' -bench AuditRecord -benchtime 4000x
func BenchmarkAuditRecord(b *testing.B) {
	l, s := newAuditLogTB(b)
	ctx := context.Background()
	for _, callers := range []int{1, 8, 64, 256} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			commits := l.Commits()
			var next atomic.Int64
			waits := make([][]time.Duration, callers)
			var wg sync.WaitGroup
			pg0, pgOK := pgtest.ServerCPU(ctx, s.db.Pool)
			b.ResetTimer()
			start := time.Now()
			for c := range callers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if err := l.Record(ctx, entry(s.a.ID, "bench", audit.OutcomeOK)); err != nil {
							b.Error(err)
							return
						}
						waits[c] = append(waits[c], time.Since(t0))
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			all := slices.Concat(waits...)
			slices.Sort(all)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
			b.ReportMetric(float64(b.N)/float64(l.Commits()-commits), "rows/commit")
			if pg1, ok := pgtest.ServerCPU(ctx, s.db.Pool); ok && pgOK {
				b.ReportMetric(float64((pg1-pg0).Microseconds())/float64(b.N), "pg-µs/row")
			}
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Microseconds())/1000, "p99-ms")
			}
		})
	}
}

// BenchmarkAuditRecordBusyPool is one durable audit row from 16 concurrent
// callers while request handlers keep every connection of the pool the
// store was opened with in use ("busy": short queries, one after another,
// from as many goroutines as the pool has connections), against the same
// with that pool idle. The writers commit on connections of their own, so
// the busy pool should cost them little.
//
//	go test ./storage/postgres -run '^$' -bench AuditRecordBusyPool -benchtime 2000x
func BenchmarkAuditRecordBusyPool(b *testing.B) {
	for _, busy := range []bool{false, true} {
		name := "idle"
		if busy {
			name = "busy"
		}
		b.Run(name, func(b *testing.B) {
			l, s := newAuditLogTB(b)
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			if busy {
				for range s.db.Pool.Config().MaxConns {
					wg.Go(func() {
						for ctx.Err() == nil {
							_, _ = s.db.Pool.Exec(ctx, `SELECT pg_sleep(0.002)`)
						}
					})
				}
			}
			defer func() { stop(); wg.Wait() }()
			b.SetParallelism(8) // 16 goroutines on 2 CPUs
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := l.Record(context.Background(), entry(s.a.ID, "bench", audit.OutcomeOK)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/float64(l.Commits()), "rows/commit")
		})
	}
}

// BenchmarkAuditWALPerRow is the WAL the trail writes per row once it is
// large: 200,000 rows of history in one tenant, a checkpoint, then b.N rows
// recorded from 8 callers, with ids that are random (UUIDv4, as before) and
// time-ordered (UUIDv7, audit.NewID). The first change to an index page
// after a checkpoint writes the whole page to the WAL; random ids change a
// different page of the (tenant, id) key with nearly every row, time-ordered
// ids the same few at its end. It reports WAL bytes per row and rows per
// second.
//
//	go test ./storage/postgres -run '^$' -bench AuditWALPerRow -benchtime 4000x
func BenchmarkAuditWALPerRow(b *testing.B) {
	l, s := newAuditLogTB(b)
	ctx := context.Background()
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO audit_events (tenant_id, id, at, principal_kind, principal_id, tool, args_digest,
		outcome, event_type) SELECT $1, gen_random_uuid(), now() - g * interval '1 ms', 'employee', 'agent:x', 'history', 'd',
		'ok', 'tool_call' FROM generate_series(1, 200000) g`, s.a.ID)
	if err != nil {
		b.Fatal(err)
	}
	for _, ids := range []struct {
		name string
		new  func() uuid.UUID
	}{{"random", uuid.New}, {"time-ordered", audit.NewID}} {
		b.Run("ids="+ids.name, func(b *testing.B) {
			var lsn0, lsn1 string
			if _, err := s.db.Pool.Exec(ctx, `CHECKPOINT`); err != nil {
				b.Skipf("CHECKPOINT needs a superuser or pg_checkpoint: %v", err)
			}
			if err := s.db.Pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn0); err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range 8 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						e := entry(s.a.ID, "bench", audit.OutcomeOK)
						e.ID = ids.new()
						if err := l.Record(ctx, e); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			var wal float64
			if err := s.db.Pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn1); err != nil {
				b.Fatal(err)
			}
			if err := s.db.Pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)`, lsn1, lsn0).Scan(&wal); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(wal/float64(b.N), "wal-B/row")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
		})
	}
}
