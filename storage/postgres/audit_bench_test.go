package postgres_test

import (
	"context"
	"testing"

	"github.com/visorhq/visor/services/audit"
)

// BenchmarkAuditRecord measures one durable audit row from 16 concurrent
// callers, as the MCP endpoint records them: each Record returns once its
// batch committed.
//
//	go test ./storage/postgres -run '^$' -bench AuditRecord -benchtime 4000x
func BenchmarkAuditRecord(b *testing.B) {
	l, s := newAuditLogTB(b)
	ctx := context.Background()
	b.SetParallelism(8) // 16 goroutines on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Record(ctx, entry(s.a.ID, "bench", audit.OutcomeOK)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/float64(l.Commits()), "rows/commit")
}
