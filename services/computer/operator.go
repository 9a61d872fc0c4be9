package computer

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// SessionReader reads a tenant's sessions for operators. Every method takes
// the tenant; another tenant's session is fault.NotFound.
type SessionReader interface {
	// Session returns one session, open or ended.
	Session(ctx context.Context, tenantID, id uuid.UUID) (Session, error)
	// TenantSessions lists the tenant's open sessions, then its ended
	// ones, each newest first, at most limit in all.
	TenantSessions(ctx context.Context, tenantID uuid.UUID, limit int) ([]Session, error)
}

// Open reports whether the session still holds a browser.
func (s Session) Open() bool {
	return s.State == SessionStarting || s.State == SessionLive || s.State == SessionPaused
}

// IdleDeadline is when an open session ends if no call touches it.
func (s Session) IdleDeadline() time.Time { return s.LastUsedAt.Add(IdleTimeout) }

// EndsBy is when an open session ends however busy it is.
func (s Session) EndsBy() time.Time { return s.StartedAt.Add(SessionLifetime) }

// StopForOperator stops an employee's open session on an operator's
// request, as computer_session_stop does for the employee: the worker
// removes its container and the session ends, releasing its workspace.
// Errors: fault.NotFound when id is not the employee's open session.
func (s *Service) StopForOperator(ctx context.Context, tenantID, agentID, id uuid.UUID) error {
	_, err := s.stop(ctx, caller{tenant: tenantID, agent: agentID}, id.String(), EndByOperator)
	return err
}

// Failed reports whether the session ended by a fault rather than by
// anyone's choice or its limits: it could not start, or its worker was
// lost or fell silent.
func (s Session) Failed() bool {
	switch s.EndReason {
	case EndStartFailed, EndWorkerLost, EndWorkerSilent:
		return true
	}
	return s.State == SessionLost
}
