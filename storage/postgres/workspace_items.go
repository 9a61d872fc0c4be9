package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/workspace"
)

var (
	_ workspace.TaskStore  = (*WorkspaceStore)(nil)
	_ workspace.SkillStore = (*WorkspaceStore)(nil)
)

// PutArtifact stores an artifact.
func (s *WorkspaceStore) PutArtifact(ctx context.Context, a workspace.Artifact, content []byte) error {
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO workspace_artifacts (tenant_id, agent_id, id, name, media_type, sha256, size, content, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, a.TenantID, a.AgentID, a.ID, a.Name, a.MediaType, a.SHA256, a.Size, content, a.CreatedAt)
	return mapErr(err, "artifact")
}

const artifactCols = `tenant_id, agent_id, id, name, media_type, sha256, size, created_at`

func scanArtifact(row pgx.Row, content *[]byte) (workspace.Artifact, error) {
	var a workspace.Artifact
	dest := []any{&a.TenantID, &a.AgentID, &a.ID, &a.Name, &a.MediaType, &a.SHA256, &a.Size, &a.CreatedAt}
	if content != nil {
		dest = append(dest, content)
	}
	return a, row.Scan(dest...)
}

// Artifact returns one artifact of the tenant.
func (s *WorkspaceStore) Artifact(ctx context.Context, tenantID, id uuid.UUID, withContent bool) (workspace.Artifact, []byte, error) {
	q := `SELECT ` + artifactCols + ` FROM workspace_artifacts WHERE tenant_id = $1 AND id = $2`
	var content []byte
	var dst *[]byte
	if withContent {
		q = `SELECT ` + artifactCols + `, content FROM workspace_artifacts WHERE tenant_id = $1 AND id = $2`
		dst = &content
	}
	a, err := scanArtifact(s.db.Pool.QueryRow(ctx, q, tenantID, id), dst)
	return a, content, mapErr(err, "artifact")
}

// Artifacts lists artifacts, newest first.
func (s *WorkspaceStore) Artifacts(ctx context.Context, tenantID, agentID uuid.UUID, limit int) ([]workspace.Artifact, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+artifactCols+` FROM workspace_artifacts
		WHERE tenant_id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR agent_id = $2) ORDER BY created_at DESC LIMIT $3`,
		tenantID, agentID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.Artifact, error) { return scanArtifact(r, nil) })
}

// AddLink records a download token's hash.
func (s *WorkspaceStore) AddLink(ctx context.Context, tenantID, artifactID uuid.UUID, tokenSHA256 string, expires time.Time) error {
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO workspace_artifact_links (token_sha256, tenant_id, artifact_id, expires_at) VALUES ($1, $2, $3, $4)`,
		tokenSHA256, tenantID, artifactID, expires)
	return mapErr(err, "artifact")
}

// ByLink returns the artifact a live token of the tenant opens.
func (s *WorkspaceStore) ByLink(ctx context.Context, tenantID uuid.UUID, tokenSHA256 string, now time.Time) (workspace.Artifact, []byte, error) {
	var content []byte
	a, err := scanArtifact(s.db.Pool.QueryRow(ctx, `SELECT a.tenant_id, a.agent_id, a.id, a.name, a.media_type, a.sha256, a.size, a.created_at, a.content
		FROM workspace_artifact_links l JOIN workspace_artifacts a ON a.tenant_id = l.tenant_id AND a.id = l.artifact_id
		WHERE l.token_sha256 = $1 AND l.tenant_id = $2 AND l.expires_at > $3`, tokenSHA256, tenantID, now), &content)
	return a, content, mapErr(err, "artifact link")
}

// CreateTask inserts a task unless the employee has too many open ones.
// Its board task, when set, must be one of its tenant's (NotFound
// otherwise).
func (s *WorkspaceStore) CreateTask(ctx context.Context, t *workspace.Task) error {
	body, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, t.TenantID, t.AgentID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM workspace_tasks WHERE tenant_id = $1 AND agent_id = $2 AND state <> 'completed'`,
			t.TenantID, t.AgentID).Scan(&n); err != nil {
			return err
		}
		if n >= workspace.MaxOpenTasks {
			return fault.New(fault.Conflict, "you have %d unfinished tasks; complete some first", n)
		}
		if t.BoardTaskID != nil { // a link to a board task of the same tenant only
			var found bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE tenant_id = $1 AND id = $2)`, t.TenantID, *t.BoardTaskID).Scan(&found); err != nil {
				return err
			}
			if !found {
				return fault.New(fault.NotFound, "board task %s not found", *t.BoardTaskID)
			}
		}
		err := tx.QueryRow(ctx, `INSERT INTO workspace_tasks (tenant_id, agent_id, id, title, state, board_task_id, body)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at, updated_at`,
			t.TenantID, t.AgentID, t.ID, t.Title, t.State, t.BoardTaskID, body).Scan(&t.CreatedAt, &t.UpdatedAt)
		return mapErr(err, "task")
	})
}

func scanTrackedTask(row pgx.Row) (workspace.Task, error) {
	var t workspace.Task
	var body []byte
	var tenant, agent uuid.UUID
	var created, updated time.Time
	if err := row.Scan(&tenant, &agent, &body, &created, &updated); err != nil {
		return t, err
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return t, err
	}
	t.TenantID, t.AgentID, t.CreatedAt, t.UpdatedAt = tenant, agent, created, updated
	return t, nil
}

// Task returns one of the employee's tasks.
func (s *WorkspaceStore) Task(ctx context.Context, tenantID, agentID, id uuid.UUID) (workspace.Task, error) {
	t, err := scanTrackedTask(s.db.Pool.QueryRow(ctx, `SELECT tenant_id, agent_id, body, created_at, updated_at FROM workspace_tasks
		WHERE tenant_id = $1 AND agent_id = $2 AND id = $3`, tenantID, agentID, id))
	return t, mapErr(err, "task")
}

// Tasks lists the employee's tasks.
func (s *WorkspaceStore) Tasks(ctx context.Context, tenantID, agentID uuid.UUID, state string, limit int) ([]workspace.Task, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT tenant_id, agent_id, body, created_at, updated_at FROM workspace_tasks
		WHERE tenant_id = $1 AND agent_id = $2 AND ($3 = '' OR state = $3) ORDER BY updated_at DESC LIMIT $4`, tenantID, agentID, state, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.Task, error) { return scanTrackedTask(r) })
}

// UpdateTask applies fn under a row lock.
func (s *WorkspaceStore) UpdateTask(ctx context.Context, tenantID, agentID, id uuid.UUID, fn func(*workspace.Task) error) (workspace.Task, error) {
	var t workspace.Task
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		t, err = scanTrackedTask(tx.QueryRow(ctx, `SELECT tenant_id, agent_id, body, created_at, updated_at FROM workspace_tasks
			WHERE tenant_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE`, tenantID, agentID, id))
		if err != nil {
			return mapErr(err, "task")
		}
		if err := fn(&t); err != nil {
			return err
		}
		body, err := json.Marshal(t)
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `UPDATE workspace_tasks SET title = $4, state = $5, body = $6, updated_at = now()
			WHERE tenant_id = $1 AND agent_id = $2 AND id = $3 RETURNING updated_at`, tenantID, agentID, id, t.Title, t.State, body).Scan(&t.UpdatedAt)
	})
	return t, err
}

const skillCols = `agent_id, name, version, active, description, sha256, size, created_at`

func scanSkill(row pgx.Row) (workspace.Skill, error) {
	var k workspace.Skill
	err := row.Scan(&k.AgentID, &k.Name, &k.Version, &k.Active, &k.Description, &k.SHA256, &k.Size, &k.CreatedAt)
	return k, err
}

// AddSkill stores a new active version.
func (s *WorkspaceStore) AddSkill(ctx context.Context, tenantID uuid.UUID, k workspace.Skill, content []byte) (int, error) {
	var v int
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, k.AgentID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) + 1 FROM workspace_skills WHERE tenant_id = $1 AND agent_id = $2 AND name = $3`,
			tenantID, k.AgentID, k.Name).Scan(&v); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE workspace_skills SET active = false WHERE tenant_id = $1 AND agent_id = $2 AND name = $3 AND active`,
			tenantID, k.AgentID, k.Name); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO workspace_skills (tenant_id, agent_id, name, version, active, description, sha256, size, content)
			VALUES ($1, $2, $3, $4, true, $5, $6, $7, $8)`, tenantID, k.AgentID, k.Name, v, k.Description, k.SHA256, k.Size, content)
		return mapErr(err, "skill "+k.Name)
	})
	return v, err
}

// Skills lists every version of the employee's Skills.
func (s *WorkspaceStore) Skills(ctx context.Context, tenantID, agentID uuid.UUID) ([]workspace.Skill, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+skillCols+` FROM workspace_skills WHERE tenant_id = $1 AND agent_id = $2 ORDER BY name, version`,
		tenantID, agentID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.Skill, error) { return scanSkill(r) })
}

// ActiveSkill returns a Skill's active version.
func (s *WorkspaceStore) ActiveSkill(ctx context.Context, tenantID, agentID uuid.UUID, name string) (workspace.Skill, error) {
	k, err := scanSkill(s.db.Pool.QueryRow(ctx, `SELECT `+skillCols+` FROM workspace_skills
		WHERE tenant_id = $1 AND agent_id = $2 AND name = $3 AND active`, tenantID, agentID, name))
	return k, mapErr(err, "skill "+name)
}

// SkillArchive returns a version's packed folder.
func (s *WorkspaceStore) SkillArchive(ctx context.Context, tenantID, agentID uuid.UUID, name string, version int) ([]byte, error) {
	var b []byte
	err := s.db.Pool.QueryRow(ctx, `SELECT content FROM workspace_skills WHERE tenant_id = $1 AND agent_id = $2 AND name = $3 AND version = $4`,
		tenantID, agentID, name, version).Scan(&b)
	return b, mapErr(err, "skill "+name)
}

// ActivateSkill makes version the active one.
func (s *WorkspaceStore) ActivateSkill(ctx context.Context, tenantID, agentID uuid.UUID, name string, version int) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		var ok bool
		err := tx.QueryRow(ctx, `SELECT true FROM workspace_skills WHERE tenant_id = $1 AND agent_id = $2 AND name = $3 AND version = $4 FOR UPDATE`,
			tenantID, agentID, name, version).Scan(&ok)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.New(fault.NotFound, "skill %s has no version %d", name, version)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE workspace_skills SET active = false WHERE tenant_id = $1 AND agent_id = $2 AND name = $3 AND active`,
			tenantID, agentID, name); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE workspace_skills SET active = true WHERE tenant_id = $1 AND agent_id = $2 AND name = $3 AND version = $4`,
			tenantID, agentID, name, version)
		return err
	})
}

// BankSkills lists the tenant's active Skills matching query.
func (s *WorkspaceStore) BankSkills(ctx context.Context, tenantID uuid.UUID, query string, limit int) ([]workspace.Skill, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+skillCols+` FROM workspace_skills WHERE tenant_id = $1 AND active
		AND ($2 = '' OR strpos(lower(name || ' ' || description), lower($2)) > 0) ORDER BY name, created_at DESC LIMIT $3`, tenantID, query, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.Skill, error) { return scanSkill(r) })
}

// SetSkillEnv stores a sealed variable.
func (s *WorkspaceStore) SetSkillEnv(ctx context.Context, tenantID, agentID uuid.UUID, skill string, v workspace.EnvVar) error {
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO workspace_skill_env (tenant_id, agent_id, skill, name, sealed_value) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant_id, agent_id, skill, name) DO UPDATE SET sealed_value = excluded.sealed_value, updated_at = now()`,
		tenantID, agentID, skill, v.Name, v.Sealed)
	return mapErr(err, "environment variable")
}

// UnsetSkillEnv removes a variable.
func (s *WorkspaceStore) UnsetSkillEnv(ctx context.Context, tenantID, agentID uuid.UUID, skill, name string) (bool, error) {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM workspace_skill_env WHERE tenant_id = $1 AND agent_id = $2 AND skill = $3 AND name = $4`,
		tenantID, agentID, skill, name)
	return tag.RowsAffected() > 0, err
}

// SkillEnv lists variables, sealed.
func (s *WorkspaceStore) SkillEnv(ctx context.Context, tenantID, agentID uuid.UUID, skill string) ([]workspace.EnvVar, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT skill, name, sealed_value FROM workspace_skill_env
		WHERE tenant_id = $1 AND agent_id = $2 AND ($3 = '' OR skill = $3) ORDER BY skill, name`, tenantID, agentID, skill)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.EnvVar, error) {
		var v workspace.EnvVar
		return v, r.Scan(&v.Skill, &v.Name, &v.Sealed)
	})
}

// RewrapAll re-wraps every sealed Skill variable (secrets.Holder).
func (s *WorkspaceStore) RewrapAll(ctx context.Context, rewrap func(string) (string, bool, error)) (n int, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT tenant_id, agent_id, skill, name, sealed_value FROM workspace_skill_env FOR UPDATE`)
		if err != nil {
			return err
		}
		type sealed struct {
			tenant, agent uuid.UUID
			skill, name   string
			value         string
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sealed, error) {
			var v sealed
			return v, r.Scan(&v.tenant, &v.agent, &v.skill, &v.name, &v.value)
		})
		if err != nil {
			return err
		}
		for _, v := range all {
			nv, changed, err := rewrap(v.value)
			if err != nil {
				return err
			}
			if !changed {
				continue
			}
			if _, err := tx.Exec(ctx, `UPDATE workspace_skill_env SET sealed_value = $5 WHERE tenant_id = $1 AND agent_id = $2 AND skill = $3 AND name = $4`,
				v.tenant, v.agent, v.skill, v.name, nv); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
