package computer

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Session states. A session is open while starting, live or paused; stopped
// and lost are final.
const (
	SessionStarting = "starting"
	SessionLive     = "live"
	SessionPaused   = "paused"
	SessionStopped  = "stopped"
	SessionLost     = "lost"
)

// Session is one employee's browser session: the container a worker holds
// for it, its viewport, its action budget and the workspace it attached.
type Session struct {
	TenantID    uuid.UUID
	ID          uuid.UUID
	AgentID     uuid.UUID
	Worker      string // the worker that holds the container
	State       string
	Width       int
	Height      int
	MaxActions  int
	ActionsUsed int
	WorkspaceID *uuid.UUID
	Allowed     []string // allowed_domains at start, pinned for the session
	StartedAt   time.Time
	LastUsedAt  time.Time
	EndReason   string // an end-reason code (EndIdle, …); "" while open
}

// SessionStore keeps session rows. Every method takes the tenant.
type SessionStore interface {
	// CreateSession inserts s as starting; fault.Conflict when the employee
	// already has an open session.
	CreateSession(ctx context.Context, s *Session) error
	// OpenSession returns the employee's open session, fault.NotFound when
	// it has none.
	OpenSession(ctx context.Context, tenantID, agentID uuid.UUID) (Session, error)
	// LastSession returns the employee's most recently started session,
	// open or ended; fault.NotFound when it has none.
	LastSession(ctx context.Context, tenantID, agentID uuid.UUID) (Session, error)
	// MarkLive records the worker holding a started session.
	MarkLive(ctx context.Context, tenantID, id uuid.UUID, worker string) error
	// CountAction counts one action of a live session and touches it; it
	// returns the session after counting, and fault.Conflict when
	// max_actions are used up (nothing counted).
	CountAction(ctx context.Context, tenantID, id uuid.UUID) (Session, error)
	// Touch records a call that does not count as an action.
	Touch(ctx context.Context, tenantID, id uuid.UUID) error
	// EndSession moves an open session to state (stopped or lost) with a
	// reason and releases its workspace lease in the same transaction. It
	// reports whether the session was open.
	EndSession(ctx context.Context, tenantID, id uuid.UUID, state, reason string) (bool, error)
	// SaveScreenshot replaces an open session's latest screenshot.
	SaveScreenshot(ctx context.Context, tenantID, id uuid.UUID, shot Screenshot) error
	// LatestScreenshot returns an open session's latest screenshot,
	// fault.NotFound when it has none or is not open. Ending a session
	// deletes its screenshot.
	LatestScreenshot(ctx context.Context, tenantID, id uuid.UUID) (Screenshot, error)
}

// ErrLost is wrapped by a Driver's error when the worker holding a session,
// or its container, is gone.
var ErrLost = errors.New("computer-use session lost")

// Spec is what a worker needs to start a session's container.
type Spec struct {
	Tenant, Agent, Session uuid.UUID
	Width, Height          int
	// Allowed is the normalized allowlist; empty means no network at all.
	Allowed []string
	// Workspace is the attached workspace, nil when none is.
	Workspace *uuid.UUID
	// Files is the attached workspace's content, mounted read-only at
	// MountPath for root only; nil when none is attached. The worker that
	// starts the session loads it.
	Files []File
	// Tree is the employee's file-tool workspace, mounted live and
	// read-only at TreePath; nil when none is. The start goes to
	// Tree.Worker.
	Tree *TreeMount
	// TreeDir is the tree's host folder, set by the worker that pinned it;
	// TreeRelease ends the pin (the driver calls it when the session ends
	// or fails to start).
	TreeDir     string
	TreeRelease func()
}

// Ref names a session on the worker that holds it.
type Ref struct {
	Tenant, Session uuid.UUID
	Worker          string
}

// Action kinds.
const (
	ActScreenshot = "screenshot"
	ActClick      = "click"
	ActType       = "type"
	ActKey        = "key"
	ActScroll     = "scroll"
	ActNavigate   = "navigate"
)

// Action is one step a session's browser performs.
type Action struct {
	Kind      string
	X, Y      int
	Button    string // left or right
	Double    bool
	Text      string
	Key       string
	Direction string
	Amount    int
	URL       string
}

// Counted reports whether the action counts against max_actions.
func (a Action) Counted() bool { return a.Kind != ActScreenshot }

// Outcome is what a worker reports after an action.
type Outcome struct {
	// PNG is the masked screenshot (screenshot only).
	PNG []byte
	// Masked counts the sensitive regions painted over.
	Masked int
	// FullyMasked, when not empty, is why the whole picture was painted
	// over (see the Mask* reasons); PNG is then a blank picture.
	FullyMasked string
	// URL is the page's address after the action, host only.
	Host string
}

// Reasons a screenshot is fully masked.
const (
	MaskSeveralWindows = "several windows are open"
	MaskSensitiveFront = "the front window is sensitive"
	MaskUnreadable     = "the front window could not be read"
	MaskDetectionFail  = "detection of sensitive fields failed"
)

// Driver runs sessions on workers. Start returns the worker that holds the
// new session; Do, Stop and Put reach that worker. An error wrapping
// ErrLost means the session is gone for good.
type Driver interface {
	Start(ctx context.Context, s Spec) (worker string, err error)
	Do(ctx context.Context, r Ref, a Action) (Outcome, error)
	Stop(ctx context.Context, r Ref) error
	// Put copies a file just written to the session's workspace into the
	// session's mounted copy.
	Put(ctx context.Context, r Ref, f File) error
}

// MaxStoredScreenshot is the largest screenshot kept as a session's latest
// (bytes of PNG); a larger one is answered but not kept.
const MaxStoredScreenshot = 2 << 20

// Screenshot is the latest masked screenshot of a live session, kept for
// the dashboard. Only masked pictures ever reach it: masking happens on the
// worker before a picture leaves it.
type Screenshot struct {
	PNG         []byte
	Width       int
	Height      int
	Masked      int
	FullyMasked string
	TakenAt     time.Time
}
