package computer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// Scanner flags text that reads like instructions to a model (prompt
// injection). Read results carry its flags next to the fenced content.
type Scanner interface {
	Scan(text string) []string
}

// Service runs the computer-use tools: the workspace rules on its store,
// and sessions through a Driver that reaches the worker holding each one.
type Service struct {
	ws       WorkspaceStore
	sessions SessionStore
	driver   Driver // nil when no worker runs browser sessions
	scanner  Scanner
	trees    Trees // nil: sessions never mount the file-tool workspace
	log      *slog.Logger
	now      func() time.Time
}

// NewService returns the service. driver may be nil: sessions are then
// refused as unavailable, and workspaces still list and read.
func NewService(ws WorkspaceStore, sessions SessionStore, driver Driver, scanner Scanner, log *slog.Logger) *Service {
	if scanner == nil {
		scanner = InjectionScanner{}
	}
	return &Service{ws: ws, sessions: sessions, driver: driver, scanner: scanner, log: log, now: time.Now}
}

// caller is the AI employee a call acts for.
type caller struct {
	tenant, agent uuid.UUID
	settings      identity.AgentSettings
	workspacesOn  bool
}

func callerOf(p identity.Principal, agent *identity.Agent, t identity.Tenant) (caller, error) {
	if !p.IsEmployee() || agent == nil {
		return caller{}, fault.New(fault.Forbidden, "computer use acts for an AI employee; this credential is not one")
	}
	return caller{tenant: p.TenantID, agent: agent.ID, settings: agent.Settings, workspacesOn: t.Settings.ComputerUseWorkspaces}, nil
}

// maxActions is the employee's max_actions, DefaultMaxActions when unset.
func (c caller) maxActions() int {
	if m := c.settings.Capabilities.ComputerUseConfig.MaxActions; m > 0 {
		return m
	}
	return DefaultMaxActions
}

func (c caller) allowed() []string {
	return NormalizeDomains(c.settings.Capabilities.ComputerUseConfig.AllowedDomains)
}

// errSwitchedOff refuses a workspace call while the tenant has workspaces
// switched off.
var errSwitchedOff = fault.New(fault.Forbidden, "computer-use workspaces are switched off for this tenant (computer_use_workspaces); you may still list and read your own")

// unavailable is the answer when no worker runs browser sessions.
var errNoDriver = fault.New(fault.Unavailable, "computer use is unavailable: no worker of this deployment runs browser sessions; retry later or ask an operator")

func wrapLost(err error) bool { return errors.Is(err, ErrLost) }

func (s *Service) logEnd(ctx context.Context, sess Session, state, reason string) {
	if _, err := s.sessions.EndSession(ctx, sess.TenantID, sess.ID, state, reason); err != nil {
		s.log.ErrorContext(ctx, "end computer-use session", "tenant", sess.TenantID, "session", sess.ID, "err", err)
	}
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
