package worker_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/worker"
)

// BenchmarkLostWorkerResume: worker a runs a job and stops beating (as a
// killed process does) while worker b runs beside it with the default
// LostAfter (5 s). It reports the time from a's last beat to b starting
// the job. Run with -benchtime=3x.
func BenchmarkLostWorkerResume(b *testing.B) {
	log := slog.New(slog.DiscardHandler)
	var took []float64
	for range b.N {
		db := pgtest.New(b)
		start := func(id string) (*worker.Runner, chan int64) {
			return startHold(b, db, worker.Options{Logger: log, ID: id, DrainTimeout: 100 * time.Millisecond})
		}
		a, startedA := start("worker-a")
		res, err := a.Client().Insert(context.Background(), holdArgs{}, nil)
		require.NoError(b, err)
		<-startedA
		_, startedB := start("worker-b")
		var beat time.Time
		a.Freeze()
		require.NoError(b, db.Pool.QueryRow(context.Background(), `SELECT beat_at FROM worker_heartbeats WHERE id = 'worker-a'`).Scan(&beat))
		select {
		case id := <-startedB:
			require.Equal(b, res.Job.ID, id)
		case <-time.After(time.Minute):
			b.Fatal("never resumed")
		}
		took = append(took, time.Since(beat).Seconds())
	}
	var sum, worst float64
	for _, s := range took {
		sum += s
		worst = max(worst, s)
	}
	b.ReportMetric(sum/float64(len(took)), "resume-mean-s")
	b.ReportMetric(worst, "resume-max-s")
}
