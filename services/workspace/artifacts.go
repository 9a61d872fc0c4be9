package workspace

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Artifact limits.
const (
	MaxArtifactBytes = 64 << 20
	LinkTTL          = time.Hour
	MaxLinkTTL       = 7 * 24 * time.Hour
)

// Artifact is an immutable published file (a folder is published as
// tar.gz).
type Artifact struct {
	TenantID  uuid.UUID `json:"-"`
	AgentID   uuid.UUID `json:"agent_id"`
	ID        uuid.UUID `json:"artifact_id"`
	Name      string    `json:"name"`
	MediaType string    `json:"media_type"`
	SHA256    string    `json:"sha256"`
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"created_at"`
}

// ArtifactStore keeps artifacts and their download links. Every method
// names its tenant; another tenant's artifact is NotFound.
type ArtifactStore interface {
	// PutArtifact stores a's content (already hashed into a).
	PutArtifact(ctx context.Context, a Artifact, content []byte) error
	// Artifact returns the artifact with its content when withContent.
	Artifact(ctx context.Context, tenantID, id uuid.UUID, withContent bool) (Artifact, []byte, error)
	// Artifacts lists an employee's artifacts (every employee's for
	// uuid.Nil), newest first, at most limit.
	Artifacts(ctx context.Context, tenantID, agentID uuid.UUID, limit int) ([]Artifact, error)
	// AddLink records a download token's hash until expires.
	AddLink(ctx context.Context, tenantID, artifactID uuid.UUID, tokenSHA256 string, expires time.Time) error
	// ByLink returns the artifact a live token of the tenant opens, with
	// its content. NotFound for an unknown, expired or other tenant's
	// token.
	ByLink(ctx context.Context, tenantID uuid.UUID, tokenSHA256 string, now time.Time) (Artifact, []byte, error)
}

// MaxSkillBytes bounds a Skill's packed folder.
const MaxSkillBytes = 2 << 20
