package workspace

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Skill is one installed version of a Skill: a folder holding SKILL.md.
type Skill struct {
	AgentID     uuid.UUID `json:"-"`
	Name        string    `json:"name"`
	Version     int       `json:"version"`
	Active      bool      `json:"active"`
	Description string    `json:"description"`
	SHA256      string    `json:"sha256"`
	Size        int64     `json:"size"`
	CreatedAt   time.Time `json:"created_at"`
}

// EnvVar is a Skill environment variable as stored: its value sealed.
type EnvVar struct {
	Skill  string
	Name   string
	Sealed string
}

// SkillStore keeps Skills and their environments per employee. Every
// method names its tenant; another tenant's Skill is NotFound.
type SkillStore interface {
	// AddSkill stores a new version of s (its content packed as tar.gz)
	// and makes it the active one. It returns the version.
	AddSkill(ctx context.Context, tenantID uuid.UUID, s Skill, content []byte) (int, error)
	// Skills lists the employee's Skills, every version, by name then
	// version.
	Skills(ctx context.Context, tenantID, agentID uuid.UUID) ([]Skill, error)
	// ActiveSkill returns the active version of a Skill.
	ActiveSkill(ctx context.Context, tenantID, agentID uuid.UUID, name string) (Skill, error)
	// SkillArchive returns a version's packed folder.
	SkillArchive(ctx context.Context, tenantID, agentID uuid.UUID, name string, version int) ([]byte, error)
	// ActivateSkill makes version the active one.
	ActivateSkill(ctx context.Context, tenantID, agentID uuid.UUID, name string, version int) error
	// BankSkills lists the active Skills of every employee of the tenant
	// whose name or description holds query (case-insensitive).
	BankSkills(ctx context.Context, tenantID uuid.UUID, query string, limit int) ([]Skill, error)
	SetSkillEnv(ctx context.Context, tenantID, agentID uuid.UUID, skill string, v EnvVar) error
	// UnsetSkillEnv removes a variable; false when it was not set.
	UnsetSkillEnv(ctx context.Context, tenantID, agentID uuid.UUID, skill, name string) (bool, error)
	// SkillEnv lists a Skill's variables; every Skill's for skill "".
	SkillEnv(ctx context.Context, tenantID, agentID uuid.UUID, skill string) ([]EnvVar, error)
}
