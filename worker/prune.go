package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/visorhq/visor/services/identity"
)

// KeyRetention is how long a revoked or expired key is kept (for audit
// lookups by key id) before the daily prune deletes it.
const KeyRetention = 30 * 24 * time.Hour

// PruneKeysArgs is the daily job that deletes keys revoked or expired more
// than KeyRetention ago, tenant by tenant.
type PruneKeysArgs struct{}

// Kind names the job in River.
func (PruneKeysArgs) Kind() string { return "prune_keys" }

// KeyPruner is the storage the prune job needs.
type KeyPruner interface {
	ListTenants(ctx context.Context) ([]identity.Tenant, error)
	// PruneKeys deletes the tenant's keys that were revoked or expired
	// before cutoff and returns how many it deleted.
	PruneKeys(ctx context.Context, tenantID uuid.UUID, cutoff time.Time) (int64, error)
}

// PruneKeysWorker works PruneKeysArgs.
type PruneKeysWorker struct {
	river.WorkerDefaults[PruneKeysArgs]
	Store KeyPruner
	Now   func() time.Time
}

// Work prunes every tenant's dead keys. A failure on one tenant fails the
// job, which River retries; already-pruned tenants are then a no-op.
func (w *PruneKeysWorker) Work(ctx context.Context, job *river.Job[PruneKeysArgs]) error {
	tenants, err := w.Store.ListTenants(ctx)
	if err != nil {
		return err
	}
	cutoff := w.Now().Add(-KeyRetention)
	for _, t := range tenants {
		if _, err := w.Store.PruneKeys(ctx, t.ID, cutoff); err != nil {
			return fmt.Errorf("prune keys of tenant %s: %w", t.Slug, err)
		}
	}
	return nil
}

// RegisterMaintenance adds Visor's own housekeeping jobs to reg.
func RegisterMaintenance(reg *Registry, store KeyPruner) {
	river.AddWorker(reg.Workers(), &PruneKeysWorker{Store: store, Now: time.Now})
	reg.AddPeriodic(river.NewPeriodicJob(river.PeriodicInterval(24*time.Hour),
		func() (river.JobArgs, *river.InsertOpts) { return PruneKeysArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true, ID: "prune_keys"}))
}
