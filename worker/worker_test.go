package worker_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/worker"
)

// echoArgs stands for another area's job kind.
type echoArgs struct{ N int }

func (echoArgs) Kind() string { return "test_echo" }

type echoWorker struct {
	river.WorkerDefaults[echoArgs]
	sum     *atomic.Int64
	started chan struct{}
	release chan struct{}
}

func (w *echoWorker) Work(ctx context.Context, j *river.Job[echoArgs]) error {
	if w.started != nil {
		close(w.started)
		<-w.release
	}
	w.sum.Add(int64(j.Args.N))
	return nil
}

// TestRunnerWorksRegisteredJobsAndDrainsOnStop: a job kind registered by
// "another package" runs; Stop waits for a running job to finish.
func TestRunnerWorksRegisteredJobsAndDrainsOnStop(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	log := slog.New(slog.DiscardHandler)
	var sum atomic.Int64
	w := &echoWorker{sum: &sum}
	reg := worker.NewRegistry()
	river.AddWorker(reg.Workers(), w)
	reg.AddQueue("slow", 2)
	r, err := worker.NewRunner(db.Pool, reg, worker.Options{Logger: log, Concurrency: 2})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, r.Start(ctx))
	require.ErrorIs(t, r.Start(ctx), lifecycle.ErrStarted, "a runner starts once")

	// Insert through a separate insert-only client, as serve does.
	ins, err := worker.NewInserter(db.Pool, log)
	require.NoError(t, err)
	_, err = ins.Insert(ctx, echoArgs{N: 2}, nil)
	require.NoError(t, err)
	_, err = ins.Insert(ctx, echoArgs{N: 3}, &river.InsertOpts{Queue: "slow"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return sum.Load() == 5 }, 15*time.Second, 20*time.Millisecond)

	// A job in flight when Stop is called finishes before Stop returns.
	w.started, w.release = make(chan struct{}), make(chan struct{})
	_, err = ins.Insert(ctx, echoArgs{N: 10}, nil)
	require.NoError(t, err)
	<-w.started
	stopped := make(chan struct{})
	go func() { r.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a job was running")
	case <-time.After(200 * time.Millisecond):
	}
	close(w.release)
	<-stopped
	r.Stop() // a second Stop returns at once
	require.EqualValues(t, 15, sum.Load())
}

// TestPruneKeysJob: the maintenance job deletes long-dead keys of every
// tenant and keeps live and recently revoked ones.
func TestPruneKeysJob(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	store := postgres.NewIdentityStore(db)
	ids := identity.NewService(store, changes.Discard{}, slog.New(slog.DiscardHandler))
	var live, dead []identity.Key
	for _, slug := range []string{"tenant-a", "tenant-b"} {
		tn, err := ids.CreateTenant(ctx, slug, slug)
		require.NoError(t, err)
		l, _, err := ids.CreateKey(ctx, tn.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "live"})
		require.NoError(t, err)
		d, _, err := ids.CreateKey(ctx, tn.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "dead"})
		require.NoError(t, err)
		_, err = ids.RevokeKey(ctx, tn.ID, d.ID)
		require.NoError(t, err)
		live, dead = append(live, l), append(dead, d)
	}
	w := &worker.PruneKeysWorker{Store: store, Now: func() time.Time { return time.Now().Add(worker.KeyRetention + time.Hour) }}
	require.NoError(t, w.Work(ctx, &river.Job[worker.PruneKeysArgs]{}))
	for i := range live {
		_, err := store.Key(ctx, live[i].TenantID, live[i].ID)
		require.NoError(t, err, "live keys stay")
		_, err = store.Key(ctx, dead[i].TenantID, dead[i].ID)
		require.Error(t, err, "long-revoked keys go")
	}
}
