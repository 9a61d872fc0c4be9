package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
