package board

import (
	"context"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// SubtaskCap is how many unfinished sub-tasks created by AI employees one
// task may hold. Routine runs, reminders and messages are not sub-tasks.
const SubtaskCap = 200

// Directory is what the board reads about AI employees (identity.Store).
type Directory interface {
	Agent(ctx context.Context, tenantID, id uuid.UUID) (identity.Agent, error)
	AgentByName(ctx context.Context, tenantID uuid.UUID, name string) (identity.Agent, error)
}

// Staff creates and retires ephemeral AI employees (identity.Service).
type Staff interface {
	CreateAgent(ctx context.Context, tenantID uuid.UUID, in identity.NewAgent) (identity.Agent, error)
	TrashAgent(ctx context.Context, tenantID, id uuid.UUID) (identity.Agent, error)
}

// TaskGrants ends the task-scoped grants of a finished task, and keeps the
// grants a running goal's grant: tags hold for its assignee, announcing
// each change so the tools follow in the employees' lists (grants.Service).
type TaskGrants interface {
	EndTask(ctx context.Context, tenantID, taskID uuid.UUID) error
	// SyncGoal makes the goal's tag grants match its assignee and tags.
	SyncGoal(ctx context.Context, tenantID, goalID, assignee uuid.UUID, tags []string) error
}

// RoundEnder ends rounds: it revokes the round tokens minted for a task,
// for one employee or (agentID uuid.Nil) for every employee.
type RoundEnder interface {
	EndRounds(ctx context.Context, tenantID, taskID, agentID uuid.UUID) error
}

// Runs says whether a round's task belongs to a continuous responsibility
// run. The responsibilities feature implements it; until then NoRuns
// answers that no task does.
type Runs interface {
	// RunOf returns the task of the run that roundTask belongs to (the
	// run's own task or any task under it), or false when none.
	RunOf(ctx context.Context, tenantID, agentID, roundTask uuid.UUID) (uuid.UUID, bool, error)
}

// RunEvents hears the board events a responsibility may subscribe to. A
// Runs that also implements it is told, after the change commits, of each
// task unblocked ("task_unblocked") or done ("task_done").
type RunEvents interface {
	TaskEvent(ctx context.Context, tenantID, taskID uuid.UUID, event string) error
}

// NoRuns is Runs when no responsibility run exists.
type NoRuns struct{}

// RunOf reports that roundTask belongs to no run.
func (NoRuns) RunOf(context.Context, uuid.UUID, uuid.UUID, uuid.UUID) (uuid.UUID, bool, error) {
	return uuid.Nil, false, nil
}

// Deps are what the Service needs. Grants, Rounds and Runs may be nil.
type Deps struct {
	Store     Store
	Relations Relations
	Directory Directory
	Staff     Staff
	Grants    TaskGrants
	Rounds    RoundEnder
	Runs      Runs
	Logger    *slog.Logger
}

// Service applies the board's rules on top of a Store. It is the only
// writer of board rows.
type Service struct {
	store Store
	rel   Relations
	dir   Directory
	staff Staff
	grant TaskGrants
	ender RoundEnder
	runs  Runs
	log   *slog.Logger
	now   func() time.Time
}

// NewService returns the board service.
func NewService(d Deps) *Service {
	s := &Service{store: d.Store, rel: d.Relations, dir: d.Directory, staff: d.Staff, grant: d.Grants,
		ender: d.Rounds, runs: d.Runs, log: d.Logger, now: time.Now}
	if s.runs == nil {
		s.runs = NoRuns{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// SetRuns installs the responsibility runs seam.
func (s *Service) SetRuns(r Runs) { s.runs = r }

// activeAgent returns the tenant's active employee id, NotFound otherwise.
func (s *Service) activeAgent(ctx context.Context, tenantID, id uuid.UUID) (identity.Agent, error) {
	a, err := s.dir.Agent(ctx, tenantID, id)
	if fault.Is(err, fault.NotFound) || (err == nil && a.Status != identity.AgentActive) {
		return identity.Agent{}, fault.New(fault.NotFound, "no active AI employee has id %s", id)
	}
	return a, err
}

// agentNamed returns the tenant's active employee called name.
func (s *Service) agentNamed(ctx context.Context, tenantID uuid.UUID, name string) (identity.Agent, error) {
	a, err := s.dir.AgentByName(ctx, tenantID, name)
	if fault.Is(err, fault.NotFound) || (err == nil && a.Status != identity.AgentActive) {
		return identity.Agent{}, fault.New(fault.NotFound, "no active AI employee is named %q", name)
	}
	return a, err
}

// Limits on what callers write.
const (
	maxTitle       = 300
	maxDescription = 20000
	maxCriteria    = 10000
	maxText        = 8000
	maxReason      = 2000
	maxTags        = 32
	maxTagBytes    = 100
)

func checkText(field, v string, min, max int) error {
	if len(strings.TrimSpace(v)) < min || len(v) > max || !utf8.ValidString(v) {
		if min > 0 {
			return fault.New(fault.Invalid, "%s must be %d-%d bytes of text", field, min, max)
		}
		return fault.New(fault.Invalid, "%s must be at most %d bytes of text", field, max)
	}
	return nil
}

func checkTags(tags []string) error {
	if len(tags) > maxTags {
		return fault.New(fault.Invalid, "at most %d tags", maxTags)
	}
	seen := map[string]bool{}
	for _, t := range tags {
		if t == "" || len(t) > maxTagBytes || strings.IndexFunc(t, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return fault.New(fault.Invalid, "each tag must be 1-%d bytes without spaces", maxTagBytes)
		}
		if seen[t] {
			return fault.New(fault.Invalid, "tag %q is listed twice", t)
		}
		seen[t] = true
	}
	return nil
}
