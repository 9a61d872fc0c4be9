package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/workspace"
)

// WorkspaceStore implements workspace.Store, workspace.ArtifactStore and
// the Skill and task stores.
type WorkspaceStore struct{ db *DB }

// NewWorkspaceStore returns a WorkspaceStore on db.
func NewWorkspaceStore(db *DB) *WorkspaceStore { return &WorkspaceStore{db: db} }

var (
	_ workspace.Store         = (*WorkspaceStore)(nil)
	_ workspace.ArtifactStore = (*WorkspaceStore)(nil)
)

const workspaceCols = `tenant_id, agent_id, id, revision, bytes_used, files_used, snapshot_bytes, quota,
	coalesce(lease_worker, ''), coalesce(lease_until, 'epoch'), last_used_at, created_at`

func scanWorkspace(row pgx.Row) (workspace.Workspace, error) {
	var w workspace.Workspace
	err := row.Scan(&w.TenantID, &w.AgentID, &w.ID, &w.Revision, &w.BytesUsed, &w.FilesUsed, &w.SnapshotBytes, &w.Quota,
		&w.LeaseWorker, &w.LeaseUntil, &w.LastUsedAt, &w.CreatedAt)
	if w.LeaseWorker == "" {
		w.LeaseUntil = time.Time{}
	}
	return w, err
}

// Ensure returns the employee's workspace, creating it.
func (s *WorkspaceStore) Ensure(ctx context.Context, tenantID, agentID uuid.UUID, quota int64) (workspace.Workspace, error) {
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO workspaces (tenant_id, agent_id, id, quota) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, agent_id) DO NOTHING`, tenantID, agentID, uuid.New(), quota)
	if err != nil {
		return workspace.Workspace{}, mapErr(err, "AI employee")
	}
	return s.Get(ctx, tenantID, agentID)
}

// Get returns the employee's workspace.
func (s *WorkspaceStore) Get(ctx context.Context, tenantID, agentID uuid.UUID) (workspace.Workspace, error) {
	w, err := scanWorkspace(s.db.Pool.QueryRow(ctx, `SELECT `+workspaceCols+` FROM workspaces WHERE tenant_id = $1 AND agent_id = $2`, tenantID, agentID))
	return w, mapErr(err, "workspace")
}

// List returns the tenant's workspaces, most recently used first.
func (s *WorkspaceStore) List(ctx context.Context, tenantID uuid.UUID) ([]workspace.Workspace, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+workspaceCols+` FROM workspaces WHERE tenant_id = $1 ORDER BY last_used_at DESC LIMIT 1000`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.Workspace, error) { return scanWorkspace(r) })
}

// Lease gives the workspace to worker when no other worker holds a live
// lease.
func (s *WorkspaceStore) Lease(ctx context.Context, tenantID, id uuid.UUID, worker string, ttl time.Duration) (workspace.Workspace, error) {
	w, err := scanWorkspace(s.db.Pool.QueryRow(ctx, `UPDATE workspaces SET lease_worker = $3, lease_until = now() + $4::interval, last_used_at = now()
		WHERE tenant_id = $1 AND id = $2 AND (lease_worker IS NULL OR lease_worker = $3 OR lease_until < now())
		RETURNING `+workspaceCols, tenantID, id, worker, ttl.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		cur, gerr := scanWorkspace(s.db.Pool.QueryRow(ctx, `SELECT `+workspaceCols+` FROM workspaces WHERE tenant_id = $1 AND id = $2`, tenantID, id))
		if gerr != nil {
			return workspace.Workspace{}, mapErr(gerr, "workspace")
		}
		return workspace.Workspace{}, &workspace.HeldError{Worker: cur.LeaseWorker}
	}
	return w, err
}

// Renew extends worker's leases of ids and returns those it lost.
func (s *WorkspaceStore) Renew(ctx context.Context, worker string, ids []uuid.UUID, ttl time.Duration) ([]uuid.UUID, error) {
	rows, err := s.db.Pool.Query(ctx, `UPDATE workspaces SET lease_until = now() + $3::interval
		WHERE id = ANY($2) AND lease_worker = $1 RETURNING id`, worker, ids, ttl.String())
	if err != nil {
		return nil, err
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, err
	}
	var lost []uuid.UUID
	for _, id := range ids {
		found := false
		for _, k := range kept {
			found = found || k == id
		}
		if !found {
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// Release ends worker's lease.
func (s *WorkspaceStore) Release(ctx context.Context, tenantID, id uuid.UUID, worker string) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE workspaces SET lease_worker = NULL, lease_until = NULL
		WHERE tenant_id = $1 AND id = $2 AND lease_worker = $3`, tenantID, id, worker)
	return err
}

// Drop ends worker's lease (the worker was found dead).
func (s *WorkspaceStore) Drop(ctx context.Context, tenantID, id uuid.UUID, worker string) error {
	return s.Release(ctx, tenantID, id, worker)
}

// Touch records a use now.
func (s *WorkspaceStore) Touch(ctx context.Context, tenantID, id uuid.UUID) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE workspaces SET last_used_at = now() WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	return err
}

// Save stores r as the next revision in chunks, while worker holds the
// lease, and drops revisions older than the previous one.
func (s *WorkspaceStore) Save(ctx context.Context, tenantID, id uuid.UUID, worker string, r io.Reader, bytes int64, files int) (int64, error) {
	var rev int64
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT revision + 1 FROM workspaces WHERE tenant_id = $1 AND id = $2 AND lease_worker = $3 FOR UPDATE`,
			tenantID, id, worker).Scan(&rev)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.New(fault.Conflict, "the workspace's lease is no longer this worker's")
		}
		if err != nil {
			return err
		}
		total, err := s.writeChunks(ctx, tx, tenantID, id, rev, r)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM workspace_chunks WHERE tenant_id = $1 AND workspace_id = $2 AND revision <= $3`,
			tenantID, id, rev-workspace.KeepRevisions); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE workspaces SET revision = $3, bytes_used = $4, files_used = $5, snapshot_bytes = $6, last_used_at = now()
			WHERE tenant_id = $1 AND id = $2`, tenantID, id, rev, bytes, files, total)
		return err
	})
	return rev, err
}

func (s *WorkspaceStore) writeChunks(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID, rev int64, r io.Reader) (int64, error) {
	buf := make([]byte, workspace.ChunkBytes)
	var total int64
	for seq := 0; ; seq++ {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO workspace_chunks (tenant_id, workspace_id, revision, seq, data) VALUES ($1, $2, $3, $4, $5)`,
				tenantID, id, rev, seq, buf[:n]); err != nil {
				return 0, err
			}
			total += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return total, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read snapshot: %w", err)
		}
	}
}

// Load writes revision's chunks to w in order.
func (s *WorkspaceStore) Load(ctx context.Context, tenantID, id uuid.UUID, revision int64, w io.Writer) error {
	if revision == 0 {
		return nil
	}
	var n int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM workspace_chunks WHERE tenant_id = $1 AND workspace_id = $2 AND revision = $3`,
		tenantID, id, revision).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fault.New(fault.NotFound, "the workspace's snapshot %d is missing", revision)
	}
	for seq := 0; seq < n; seq++ { // one chunk at a time keeps memory at a chunk
		var data []byte
		if err := s.db.Pool.QueryRow(ctx, `SELECT data FROM workspace_chunks WHERE tenant_id = $1 AND workspace_id = $2 AND revision = $3 AND seq = $4`,
			tenantID, id, revision, seq).Scan(&data); err != nil {
			return mapErr(err, "workspace snapshot chunk")
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// Reset empties the workspace and ends its lease.
func (s *WorkspaceStore) Reset(ctx context.Context, tenantID, id uuid.UUID) (workspace.Workspace, error) {
	var w workspace.Workspace
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		w, err = scanWorkspace(tx.QueryRow(ctx, `UPDATE workspaces SET revision = 0, bytes_used = 0, files_used = 0, snapshot_bytes = 0,
			lease_worker = NULL, lease_until = NULL WHERE tenant_id = $1 AND id = $2 RETURNING `+workspaceCols, tenantID, id))
		if err != nil {
			return mapErr(err, "workspace")
		}
		_, err = tx.Exec(ctx, `DELETE FROM workspace_chunks WHERE tenant_id = $1 AND workspace_id = $2`, tenantID, id)
		return err
	})
	return w, err
}
