package oauth

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/visorhq/visor/services/credentials"
)

// CleanupGrace keeps expired rows a little longer than their expiry, so a
// replayed code or a reused refresh token shortly after expiry is still
// recognized as reuse (and revokes its grant) rather than as unknown.
const CleanupGrace = 24 * time.Hour

// Cleanup deletes codes, tokens, sessions and round tokens that expired
// more than CleanupGrace ago, and stale unused metadata-document clients.
func Cleanup(ctx context.Context, store credentials.Store, now time.Time) (int64, error) {
	return store.DeleteExpired(ctx, now.Add(-CleanupGrace))
}

// CleanupArgs is the River job that runs Cleanup.
type CleanupArgs struct{}

// Kind implements river.JobArgs.
func (CleanupArgs) Kind() string { return "oauth_cleanup" }

// CleanupWorker runs CleanupArgs jobs.
type CleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]
	Store credentials.Store
}

// Work implements river.Worker.
func (w *CleanupWorker) Work(ctx context.Context, _ *river.Job[CleanupArgs]) error {
	_, err := Cleanup(ctx, w.Store, time.Now())
	return err
}

// CleanupPeriodicJob schedules the cleanup every interval (and at start).
func CleanupPeriodicJob(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return CleanupArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true})
}
