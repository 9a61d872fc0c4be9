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
)

// BenchmarkAuditRecord is the cost curve of durable audit rows against
// concurrent callers: 1, 8, 64 and 256 goroutines share b.N rows, each
// Record returning once its batch committed, as the MCP endpoint records
// them. It reports rows per second, rows per commit and each caller's
// wait (p50, p99).
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
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Microseconds())/1000, "p99-ms")
			}
		})
	}
}
