package sandbox

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/keyset"
)

// RunState is where a logged script run stands.
type RunState string

// Run states. Only Running is not final.
const (
	RunRunning     RunState = "running"
	RunFinished    RunState = "finished"    // the script ran; see the exit code
	RunUnavailable RunState = "unavailable" // the sandbox could not run it; nothing ran
	RunFailed      RunState = "failed"      // an error on our side
	RunCancelled   RunState = "cancelled"   // the caller went away
)

// Run is one execute_program call as operators see it afterwards: who ran
// what, where, and how it ended. The script and its output are not kept.
type Run struct {
	TenantID uuid.UUID
	ID       uuid.UUID // the job's RunID
	// Principal is the caller ("agent:<id>", "key:<id>", …); AgentID the
	// AI employee, uuid.Nil for any other caller.
	Principal string
	AgentID   uuid.UUID
	Image     string
	Language  Language
	State     RunState
	ExitCode  int
	TimedOut  bool
	OOMKilled bool
	OnHost    bool
	RunMS     int64
	WaitedMS  int64
	Worker    string
	// Detail says why an unavailable or failed run did not run.
	Detail    string
	StartedAt time.Time
	EndedAt   *time.Time
}

// RunPosition is a run's place in the newest-first list.
type RunPosition = keyset.Position

// RunFilter selects logged runs, newest first.
type RunFilter struct {
	// InFlight lists only runs still running that started after
	// StartedAfter (a run a crashed server left behind never ends).
	InFlight     bool
	StartedAfter time.Time
	After        *RunPosition
	Limit        int
}

// RunLog keeps a bounded per-tenant log of script runs. Every method takes
// the tenant; another tenant's run is never read or changed.
type RunLog interface {
	// StartRun records r as running; the tenant's oldest runs beyond the
	// log's bound are dropped.
	StartRun(ctx context.Context, r Run) error
	// EndRun records how r ended (its state, result and EndedAt).
	EndRun(ctx context.Context, r Run) error
	// Runs lists runs, newest first.
	Runs(ctx context.Context, tenantID uuid.UUID, f RunFilter) ([]Run, error)
}

// MaxLogged is how many runs a tenant's log keeps.
const MaxLogged = 1000
