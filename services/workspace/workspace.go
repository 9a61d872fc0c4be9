// Package workspace is the file and command tools' side of an AI
// employee's workspace: one durable tree per employee, run in a locked-down
// container on a worker, and the tools that read, search and edit it, run
// commands and long sessions in it, track multi-step tasks, install
// Skills and publish artifacts.
//
// The tree is kept in Postgres as a tar.gz snapshot per revision, cut into
// chunks (Store); a worker that takes the workspace's lease unpacks it
// into a folder, mounts it into the container and packs it back after
// changes and when it lets the workspace go. Nothing here touches Docker:
// a Host (docker/workspace) runs the container, and serve reaches it over
// the worker plane (PlaneRunner).
package workspace

import (
	"context"
	"io"
	"time"

	"github.com/google/uuid"
)

// Limits of a workspace.
const (
	DefaultQuota = 256 << 20 // bytes of files a workspace may hold
	ChunkBytes   = 1 << 20   // bytes of snapshot per stored chunk
	LeaseTTL     = 30 * time.Second
	// KeepRevisions is how many snapshots a workspace keeps (the newest
	// and the one before, so a save interrupted half way loses nothing).
	KeepRevisions = 2
)

// Workspace is one employee's durable tree as Postgres records it.
type Workspace struct {
	TenantID      uuid.UUID `json:"-"`
	AgentID       uuid.UUID `json:"agent_id"`
	ID            uuid.UUID `json:"workspace_id"`
	Revision      int64     `json:"revision"`
	BytesUsed     int64     `json:"bytes_used"`
	FilesUsed     int       `json:"files_used"`
	SnapshotBytes int64     `json:"snapshot_bytes"`
	Quota         int64     `json:"quota"`
	LeaseWorker   string    `json:"lease_worker,omitempty"`
	LeaseUntil    time.Time `json:"lease_until,omitzero"`
	LastUsedAt    time.Time `json:"last_used_at"`
	CreatedAt     time.Time `json:"created_at"`
}

// Leased reports whether a worker holds w at now.
func (w Workspace) Leased(now time.Time) bool { return w.LeaseWorker != "" && w.LeaseUntil.After(now) }

// Store keeps workspaces and their snapshots. Every method names its
// tenant; another tenant's workspace is NotFound.
type Store interface {
	// Ensure returns the employee's workspace, creating it empty.
	Ensure(ctx context.Context, tenantID, agentID uuid.UUID, quota int64) (Workspace, error)
	// Get returns the employee's workspace; NotFound when it has none.
	Get(ctx context.Context, tenantID, agentID uuid.UUID) (Workspace, error)
	// List returns the tenant's workspaces.
	List(ctx context.Context, tenantID uuid.UUID) ([]Workspace, error)
	// Lease gives the workspace to worker until now+ttl, when no other
	// worker holds a live lease. Errors: Conflict (HeldError) when one
	// does.
	Lease(ctx context.Context, tenantID, id uuid.UUID, worker string, ttl time.Duration) (Workspace, error)
	// Renew extends worker's leases of ids; it returns the ids it no
	// longer holds.
	Renew(ctx context.Context, worker string, ids []uuid.UUID, ttl time.Duration) ([]uuid.UUID, error)
	// Release ends worker's lease of the workspace (a no-op when it does
	// not hold it).
	Release(ctx context.Context, tenantID, id uuid.UUID, worker string) error
	// Drop ends any lease worker holds of the workspace, for a worker
	// found dead.
	Drop(ctx context.Context, tenantID, id uuid.UUID, worker string) error
	// Touch records a use of the workspace now.
	Touch(ctx context.Context, tenantID, id uuid.UUID) error
	// Save stores a snapshot read from r as the next revision, when worker
	// still holds the lease, with the tree's usage; it keeps
	// KeepRevisions revisions. Errors: Conflict when the lease is gone.
	Save(ctx context.Context, tenantID, id uuid.UUID, worker string, r io.Reader, bytes int64, files int) (int64, error)
	// Load writes the snapshot of revision to w (nothing for revision 0).
	Load(ctx context.Context, tenantID, id uuid.UUID, revision int64, w io.Writer) error
	// Reset empties the workspace: its snapshots go, the revision rises,
	// and any lease ends.
	Reset(ctx context.Context, tenantID, id uuid.UUID) (Workspace, error)
}

// HeldError is a lease refused because another worker holds it.
type HeldError struct{ Worker string }

func (e *HeldError) Error() string { return "the workspace is held by worker " + e.Worker }
