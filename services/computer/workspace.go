package computer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// Workspace limits.
const (
	MaxFileBytes    = 48 << 10 // one file read or written
	MaxWriteRequest = 64 << 10 // a write's whole arguments object, JSON-encoded
	MaxListFiles    = 200      // files a listing shows
	DefaultQuota    = 16 << 20 // bytes a workspace may hold
	MaxFiles        = 2000     // files a workspace may hold
	WorkspaceTTL    = 30 * 24 * time.Hour
	// MountPath is where a session sees its workspace: read-only, root only.
	MountPath = "/workspace/files"
)

// Workspace states.
const (
	WorkspaceActive  = "active"
	WorkspaceExpired = "expired"
)

// Workspace is one employee's durable folder. LeaseSession is the live
// session it is attached to, if any; only that session's owner may write.
type Workspace struct {
	TenantID     uuid.UUID  `json:"-"`
	ID           uuid.UUID  `json:"-"`
	AgentID      uuid.UUID  `json:"-"`
	State        string     `json:"state"`
	DataRevision int64      `json:"data_revision"`
	BytesUsed    int64      `json:"bytes_used"`
	FilesUsed    int        `json:"files_used"`
	Quota        int64      `json:"quota"`
	ExpiresAt    time.Time  `json:"expires_at"`
	LeaseSession *uuid.UUID `json:"-"`
	CreatedAt    time.Time  `json:"-"`
}

// Leased reports whether a session holds w.
func (w Workspace) Leased() bool { return w.LeaseSession != nil }

// FileInfo is one file of a listing. HashUnknown is set when the stored
// digest is missing, so SHA256 is empty.
type FileInfo struct {
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256,omitempty"`
	HashUnknown bool   `json:"hash_unknown"`
}

// File is one file with its content.
type File struct {
	FileInfo
	Content []byte
}

// Write is one atomic file write. ExpectedRevision, when set, must equal the
// workspace's data_revision.
type Write struct {
	TenantID, AgentID, WorkspaceID, SessionID uuid.UUID
	Path                                      string
	Content                                   []byte
	SHA256                                    string
	ExpectedRevision                          *int64
}

// WorkspaceStore keeps workspaces and their files. Every method takes the
// tenant and the owning employee: a workspace of another tenant or another
// employee is fault.NotFound, exactly like a missing one.
type WorkspaceStore interface {
	CreateWorkspace(ctx context.Context, w *Workspace) error
	Workspace(ctx context.Context, tenantID, agentID, id uuid.UUID) (Workspace, error)
	Workspaces(ctx context.Context, tenantID, agentID uuid.UUID) ([]Workspace, error)
	// Files lists up to limit files in path order and counts the stored
	// rows whose path no longer passes CheckPath (never listed, never named).
	Files(ctx context.Context, tenantID, agentID, id uuid.UUID, limit int) (files []FileInfo, unprocessable int, err error)
	File(ctx context.Context, tenantID, agentID, id uuid.UUID, path string) (File, error)
	// PutFile writes one file atomically and raises data_revision by one.
	// It refuses (fault.Conflict) unless the workspace is leased to
	// w.SessionID, on a revision mismatch, and (fault.TooLarge) over quota.
	PutFile(ctx context.Context, w Write) (Workspace, error)
	// Lease attaches the workspace to a session; fault.Conflict when
	// another session holds it.
	Lease(ctx context.Context, tenantID, agentID, id, sessionID uuid.UUID) (Workspace, error)
	// Release detaches the workspace from the session, if it holds it.
	Release(ctx context.Context, tenantID, id, sessionID uuid.UUID) error
	// AllFiles returns every file with content, to mount into a session.
	AllFiles(ctx context.Context, tenantID, agentID, id uuid.UUID) ([]File, error)
}

// FormatWorkspaceID is the id callers see: "ws-" and 32 hex digits.
func FormatWorkspaceID(id uuid.UUID) string {
	return "ws-" + strings.ReplaceAll(id.String(), "-", "")
}

// ParseWorkspaceID reads a caller's workspace id. A malformed id is the
// same "not found" as a missing one.
func ParseWorkspaceID(s string) (uuid.UUID, error) {
	hexPart, ok := strings.CutPrefix(s, "ws-")
	if !ok || len(hexPart) != 32 || strings.ToLower(hexPart) != hexPart {
		return uuid.Nil, ErrWorkspaceNotFound
	}
	id, err := uuid.Parse(hexPart)
	if err != nil {
		return uuid.Nil, ErrWorkspaceNotFound
	}
	return id, nil
}

// ErrWorkspaceNotFound is the one answer for a workspace the caller cannot
// see, whatever the reason.
var ErrWorkspaceNotFound = fault.New(fault.NotFound, "workspace not found; computer_workspace_list shows yours")

// notFound turns any NotFound from storage into the one answer.
func notFound(err error) error {
	if fault.Is(err, fault.NotFound) {
		return ErrWorkspaceNotFound
	}
	return err
}

// CheckWriteRequest checks a write's sizes: content at most MaxFileBytes of
// valid UTF-8, and the arguments object at most MaxWriteRequest bytes once
// JSON-encoded (so escapes count).
func CheckWriteRequest(args map[string]any, content string) error {
	if !utf8.ValidString(content) {
		return fault.New(fault.Invalid, "content must be UTF-8 text")
	}
	if len(content) > MaxFileBytes {
		return fault.New(fault.TooLarge, "content is %d bytes; a file holds at most %d bytes", len(content), MaxFileBytes)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		return fault.New(fault.Invalid, "arguments cannot be encoded as JSON")
	}
	if n := buf.Len() - 1; n > MaxWriteRequest { // less the encoder's newline
		return fault.New(fault.TooLarge, "the request is %d bytes once JSON-encoded; at most %d fit (quotes, backslashes, newlines and control characters take more than one byte each)", n, MaxWriteRequest)
	}
	return nil
}

// Digest returns the hex SHA-256 of b.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
