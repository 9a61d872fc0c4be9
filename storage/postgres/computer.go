package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
)

// ComputerStore is computer.WorkspaceStore and computer.SessionStore on
// Postgres: a workspace's files are rows of computer_workspace_files, so a
// workspace is the same from every worker and outlives any of them.
type ComputerStore struct{ db *DB }

var (
	_ computer.WorkspaceStore = (*ComputerStore)(nil)
	_ computer.SessionStore   = (*ComputerStore)(nil)
)

// NewComputerStore returns the store.
func NewComputerStore(db *DB) *ComputerStore { return &ComputerStore{db: db} }

// maxWorkspaces is how many workspaces one employee may keep.
const maxWorkspaces = 20

const wsCols = `tenant_id, id, agent_id, state, data_revision, bytes_used, files_used, quota, expires_at, lease_session, created_at`

func scanWS(row pgx.Row) (computer.Workspace, error) {
	var w computer.Workspace
	err := row.Scan(&w.TenantID, &w.ID, &w.AgentID, &w.State, &w.DataRevision, &w.BytesUsed, &w.FilesUsed, &w.Quota,
		&w.ExpiresAt, &w.LeaseSession, &w.CreatedAt)
	return w, err
}

// CreateWorkspace inserts w; fault.Conflict when the employee already keeps
// maxWorkspaces active ones.
func (s *ComputerStore) CreateWorkspace(ctx context.Context, w *computer.Workspace) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		// The agent row serializes concurrent creations of one employee.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, w.TenantID, w.AgentID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM computer_workspaces WHERE tenant_id = $1 AND agent_id = $2 AND state = 'active'`,
			w.TenantID, w.AgentID).Scan(&n); err != nil {
			return err
		}
		if n >= maxWorkspaces {
			return fault.New(fault.Conflict, "you already keep %d workspaces, the most allowed; reuse one by its id", maxWorkspaces)
		}
		row := tx.QueryRow(ctx, `INSERT INTO computer_workspaces (tenant_id, id, agent_id, state, quota, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+wsCols, w.TenantID, w.ID, w.AgentID, w.State, w.Quota, w.ExpiresAt)
		got, err := scanWS(row)
		if err != nil {
			return mapErr(err, "workspace")
		}
		*w = got
		return nil
	})
}

// Workspace returns one of the employee's workspaces, marking it expired
// once past expires_at.
func (s *ComputerStore) Workspace(ctx context.Context, tenantID, agentID, id uuid.UUID) (computer.Workspace, error) {
	w, err := scanWS(s.db.Pool.QueryRow(ctx, `UPDATE computer_workspaces SET state = CASE WHEN expires_at < now() THEN 'expired' ELSE state END
		WHERE tenant_id = $1 AND agent_id = $2 AND id = $3 RETURNING `+wsCols, tenantID, agentID, id))
	return w, mapErr(err, "workspace")
}

// Workspaces returns the employee's workspaces, oldest first.
func (s *ComputerStore) Workspaces(ctx context.Context, tenantID, agentID uuid.UUID) ([]computer.Workspace, error) {
	if _, err := s.db.Pool.Exec(ctx, `UPDATE computer_workspaces SET state = 'expired'
		WHERE tenant_id = $1 AND agent_id = $2 AND state = 'active' AND expires_at < now()`, tenantID, agentID); err != nil {
		return nil, err
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+wsCols+` FROM computer_workspaces WHERE tenant_id = $1 AND agent_id = $2
		ORDER BY created_at, id LIMIT $3`, tenantID, agentID, maxWorkspaces*5)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (computer.Workspace, error) { return scanWS(r) })
}

// owned checks the workspace belongs to the employee.
func owned(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenantID, agentID, id uuid.UUID) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM computer_workspaces WHERE tenant_id = $1 AND agent_id = $2 AND id = $3`, tenantID, agentID, id).Scan(&one)
	return mapErr(err, "workspace")
}

// Files lists up to limit files with a valid path, and counts the others.
func (s *ComputerStore) Files(ctx context.Context, tenantID, agentID, id uuid.UUID, limit int) ([]computer.FileInfo, int, error) {
	if err := owned(ctx, s.db.Pool, tenantID, agentID, id); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT path, octet_length(content), sha256 FROM computer_workspace_files
		WHERE tenant_id = $1 AND workspace_id = $2 ORDER BY path`, tenantID, id)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var files []computer.FileInfo
	bad := 0
	for rows.Next() {
		var f computer.FileInfo
		var sum *string
		if err := rows.Scan(&f.Path, &f.Size, &sum); err != nil {
			return nil, 0, err
		}
		if computer.CheckPath(f.Path) != nil {
			bad++
			continue
		}
		if sum == nil {
			f.HashUnknown = true
		} else {
			f.SHA256 = *sum
		}
		if len(files) < limit {
			files = append(files, f)
		}
	}
	return files, bad, rows.Err()
}

// File returns one file.
func (s *ComputerStore) File(ctx context.Context, tenantID, agentID, id uuid.UUID, path string) (computer.File, error) {
	var f computer.File
	var sum *string
	err := s.db.Pool.QueryRow(ctx, `SELECT f.path, octet_length(f.content), f.sha256, f.content FROM computer_workspace_files f
		JOIN computer_workspaces w ON w.tenant_id = f.tenant_id AND w.id = f.workspace_id
		WHERE f.tenant_id = $1 AND w.agent_id = $2 AND f.workspace_id = $3 AND f.path = $4`, tenantID, agentID, id, path).
		Scan(&f.Path, &f.Size, &sum, &f.Content)
	if sum != nil {
		f.SHA256 = *sum
	}
	return f, mapErr(err, "file")
}

// AllFiles returns every file with content, in path order.
func (s *ComputerStore) AllFiles(ctx context.Context, tenantID, agentID, id uuid.UUID) ([]computer.File, error) {
	if err := owned(ctx, s.db.Pool, tenantID, agentID, id); err != nil {
		return nil, err
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT path, octet_length(content), coalesce(sha256, ''), content FROM computer_workspace_files
		WHERE tenant_id = $1 AND workspace_id = $2 ORDER BY path`, tenantID, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (computer.File, error) {
		var f computer.File
		err := r.Scan(&f.Path, &f.Size, &f.SHA256, &f.Content)
		return f, err
	})
}

// PutFile writes one file in one transaction that holds the workspace row.
func (s *ComputerStore) PutFile(ctx context.Context, w computer.Write) (computer.Workspace, error) {
	var out computer.Workspace
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		ws, err := scanWS(tx.QueryRow(ctx, `SELECT `+wsCols+` FROM computer_workspaces
			WHERE tenant_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE`, w.TenantID, w.AgentID, w.WorkspaceID))
		if err != nil {
			return mapErr(err, "workspace")
		}
		if err := writable(ws, w); err != nil {
			return err
		}
		var oldSize int64
		err = tx.QueryRow(ctx, `SELECT octet_length(content) FROM computer_workspace_files WHERE tenant_id = $1 AND workspace_id = $2 AND path = $3`,
			w.TenantID, w.WorkspaceID, w.Path).Scan(&oldSize)
		isNew := errors.Is(err, pgx.ErrNoRows)
		if err != nil && !isNew {
			return err
		}
		bytes := ws.BytesUsed - oldSize + int64(len(w.Content))
		files := ws.FilesUsed
		if isNew {
			files++
		}
		if bytes > ws.Quota || files > computer.MaxFiles {
			return fault.New(fault.TooLarge, "the write would put the workspace over its quota (%d of %d bytes, %d of %d files); nothing was written",
				bytes, ws.Quota, files, computer.MaxFiles)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO computer_workspace_files (tenant_id, workspace_id, path, content, sha256)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, workspace_id, path)
			DO UPDATE SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256, updated_at = now()`,
			w.TenantID, w.WorkspaceID, w.Path, w.Content, w.SHA256); err != nil {
			return mapErr(err, "file")
		}
		out, err = scanWS(tx.QueryRow(ctx, `UPDATE computer_workspaces SET data_revision = data_revision + 1, bytes_used = $3,
			files_used = $4, expires_at = greatest(expires_at, now() + $5 * interval '1 second')
			WHERE tenant_id = $1 AND id = $2 RETURNING `+wsCols, w.TenantID, w.WorkspaceID, bytes, files, int64(computer.WorkspaceTTL.Seconds())))
		return err
	})
	return out, err
}

// writable refuses a write the workspace's state forbids.
func writable(ws computer.Workspace, w computer.Write) error {
	switch {
	case ws.State != computer.WorkspaceActive:
		return fault.New(fault.Conflict, "the workspace has expired; nothing was written")
	case ws.LeaseSession == nil || *ws.LeaseSession != w.SessionID:
		return fault.New(fault.Conflict, "the workspace is not attached to your live session; nothing was written")
	case w.ExpectedRevision != nil && *w.ExpectedRevision != ws.DataRevision:
		return fault.New(fault.Conflict, "revision mismatch: the workspace is at data_revision %d, not %d; read it again, then write with the new revision",
			ws.DataRevision, *w.ExpectedRevision)
	}
	return nil
}

// Lease attaches the workspace to sessionID. A lease held by a session that
// is no longer open is taken over.
func (s *ComputerStore) Lease(ctx context.Context, tenantID, agentID, id, sessionID uuid.UUID) (computer.Workspace, error) {
	var out computer.Workspace
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		ws, err := scanWS(tx.QueryRow(ctx, `SELECT `+wsCols+` FROM computer_workspaces
			WHERE tenant_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE`, tenantID, agentID, id))
		if err != nil {
			return mapErr(err, "workspace")
		}
		if ws.State != computer.WorkspaceActive || ws.ExpiresAt.Before(time.Now()) {
			return fault.New(fault.Conflict, "the workspace has expired; start with workspace \"new\"")
		}
		if ws.LeaseSession != nil && *ws.LeaseSession != sessionID {
			var open bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM computer_sessions WHERE tenant_id = $1 AND id = $2
				AND state IN ('starting', 'live', 'paused'))`, tenantID, *ws.LeaseSession).Scan(&open); err != nil {
				return err
			}
			if open {
				return fault.New(fault.Conflict, "the workspace is attached to another open session")
			}
		}
		out, err = scanWS(tx.QueryRow(ctx, `UPDATE computer_workspaces SET lease_session = $3 WHERE tenant_id = $1 AND id = $2
			RETURNING `+wsCols, tenantID, id, sessionID))
		return err
	})
	return out, err
}

// Release detaches the workspace from sessionID, if it holds it.
func (s *ComputerStore) Release(ctx context.Context, tenantID, id, sessionID uuid.UUID) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE computer_workspaces SET lease_session = NULL
		WHERE tenant_id = $1 AND id = $2 AND lease_session = $3`, tenantID, id, sessionID)
	return err
}
