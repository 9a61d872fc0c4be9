package computer

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
)

// StartRequest is computer_session_start's arguments.
type StartRequest struct {
	Task          string
	Width, Height int64
	Workspace     string // "", "new" or a ws-… id
}

// Started is what computer_session_start reports.
type Started struct {
	SessionID            string     `json:"session_id"`
	Width                int        `json:"width"`
	Height               int        `json:"height"`
	MaxActions           int        `json:"max_actions"`
	IdleTimeoutSecs      int        `json:"idle_timeout_secs"`
	EndsAt               time.Time  `json:"ends_at"`
	HighRiskConfirmation bool       `json:"high_risk_confirmation"`
	AllowedSites         []string   `json:"allowed_sites"`
	Network              bool       `json:"network"`
	WorkspaceID          string     `json:"workspace_id,omitempty"`
	MountPath            string     `json:"mount_path,omitempty"`
	Workspace            *Workspace `json:"workspace,omitempty"`
	// WorkspaceTreePath is where the browser sees the employee's
	// file-tool workspace (TreePath) when it is mounted; WorkspaceTreeNote
	// says why it is not, for an employee with the workspace tools.
	WorkspaceTreePath string `json:"workspace_tree_path,omitempty"`
	WorkspaceTreeNote string `json:"workspace_tree_note,omitempty"`
}

// StartSession starts the caller's one session.
func (s *Service) StartSession(ctx context.Context, c caller, r StartRequest) (Started, error) {
	if err := CheckViewport(r.Width, r.Height); err != nil {
		return Started{}, err
	}
	if len(r.Task) > 2000 {
		return Started{}, fault.New(fault.Invalid, "task must be at most 2000 bytes")
	}
	if s.driver == nil {
		return Started{}, errNoDriver
	}
	if old, err := s.sessions.OpenSession(ctx, c.tenant, c.agent); err == nil {
		if !s.expire(ctx, old) {
			return Started{}, fault.New(fault.Conflict, "you already have session %s; call computer_session_stop first (one session per employee)", old.ID)
		}
	} else if !fault.Is(err, fault.NotFound) {
		return Started{}, err
	}
	now := s.now()
	sess := Session{TenantID: c.tenant, ID: uuid.New(), AgentID: c.agent, State: SessionStarting, Width: int(r.Width),
		Height: int(r.Height), MaxActions: c.maxActions(), Allowed: c.allowed(), StartedAt: now, LastUsedAt: now}
	if err := s.sessions.CreateSession(ctx, &sess); err != nil {
		if fault.Is(err, fault.Conflict) {
			return Started{}, fault.New(fault.Conflict, "you already have a session; call computer_session_stop first (one session per employee)")
		}
		return Started{}, err
	}
	out, err := s.startOn(ctx, c, &sess, r.Workspace)
	if err != nil {
		s.logEnd(context.WithoutCancel(ctx), sess, SessionStopped, EndStartFailed)
		return Started{}, err
	}
	return out, nil
}

func (s *Service) startOn(ctx context.Context, c caller, sess *Session, which string) (Started, error) {
	spec := Spec{Tenant: c.tenant, Agent: c.agent, Session: sess.ID, Width: sess.Width, Height: sess.Height, Allowed: sess.Allowed}
	out := Started{SessionID: sess.ID.String(), Width: sess.Width, Height: sess.Height, MaxActions: sess.MaxActions,
		IdleTimeoutSecs: int(IdleTimeout / time.Second), EndsAt: sess.StartedAt.Add(SessionLifetime).UTC(),
		AllowedSites: sess.Allowed, Network: len(sess.Allowed) > 0}
	if which != "" {
		w, err := s.attach(ctx, c, which, sess.ID)
		if err != nil {
			return Started{}, err
		}
		spec.Workspace = &w.ID
		sess.WorkspaceID = &w.ID
		out.WorkspaceID, out.MountPath, out.Workspace = FormatWorkspaceID(w.ID), MountPath, &w
	}
	out.WorkspaceTreeNote = s.placeTree(ctx, c, &spec)
	worker, err := s.driver.Start(ctx, spec)
	var te *TreeError
	if errors.As(err, &te) {
		// Placed where the workspace cannot be mounted: start anywhere
		// without it, and say so.
		spec.Tree, out.WorkspaceTreeNote = nil, te.Reason
		worker, err = s.driver.Start(ctx, spec)
	}
	if err != nil {
		return Started{}, err
	}
	if spec.Tree != nil {
		out.WorkspaceTreePath = TreePath
	}
	if err := s.sessions.MarkLive(ctx, c.tenant, sess.ID, worker); err != nil {
		_ = s.driver.Stop(context.WithoutCancel(ctx), Ref{Tenant: c.tenant, Session: sess.ID, Worker: worker})
		return Started{}, err
	}
	return out, nil
}

// expire ends sess when it has been idle too long or outlived its lifetime,
// and reports whether it did.
func (s *Service) expire(ctx context.Context, sess Session) bool {
	now := s.now()
	reason := ""
	switch {
	case now.Sub(sess.LastUsedAt) > IdleTimeout:
		reason = EndIdle
	case now.Sub(sess.StartedAt) > SessionLifetime:
		reason = EndLifetime
	default:
		return false
	}
	if sess.Worker != "" {
		if err := s.driver.Stop(ctx, Ref{Tenant: sess.TenantID, Session: sess.ID, Worker: sess.Worker}); err != nil && !wrapLost(err) {
			s.log.WarnContext(ctx, "stop an expired computer-use session", "session", sess.ID, "err", err)
		}
	}
	s.logEnd(ctx, sess, SessionStopped, reason)
	return true
}

// ActResult is one action's answer.
type ActResult struct {
	Outcome
	ActionsUsed int
	MaxActions  int
	TimeLeft    time.Duration
}

// Act performs one action in the caller's live session.
func (s *Service) Act(ctx context.Context, c caller, a Action) (ActResult, error) {
	if s.driver == nil {
		return ActResult{}, errNoDriver
	}
	sess, err := s.liveSession(ctx, c)
	if err != nil {
		return ActResult{}, err
	}
	if a.Kind == ActNavigate {
		if _, err := CheckURL(a.URL, sess.Allowed); err != nil {
			return ActResult{}, err
		}
	}
	if a.Counted() {
		counted, err := s.sessions.CountAction(ctx, c.tenant, sess.ID)
		if fault.Is(err, fault.Conflict) {
			return ActResult{}, fault.New(fault.Conflict, "max_actions (%d) are used up for this session; stop it and start a new one", sess.MaxActions)
		}
		if err != nil {
			return ActResult{}, err
		}
		sess = counted
	} else if err := s.sessions.Touch(ctx, c.tenant, sess.ID); err != nil {
		return ActResult{}, err
	}
	o, err := s.driver.Do(ctx, Ref{Tenant: c.tenant, Session: sess.ID, Worker: sess.Worker}, a)
	if wrapLost(err) {
		return ActResult{}, s.lost(ctx, sess, err)
	}
	if err != nil {
		return ActResult{}, err
	}
	if a.Kind == ActScreenshot && len(o.PNG) > 0 {
		s.keepScreenshot(ctx, sess, o)
	}
	left := max(0, sess.StartedAt.Add(SessionLifetime).Sub(s.now()))
	return ActResult{Outcome: o, ActionsUsed: sess.ActionsUsed, MaxActions: sess.MaxActions, TimeLeft: left}, nil
}

func (s *Service) liveSession(ctx context.Context, c caller) (Session, error) {
	sess, err := s.sessions.OpenSession(ctx, c.tenant, c.agent)
	if fault.Is(err, fault.NotFound) {
		return Session{}, s.noSession(ctx, c)
	}
	if err != nil {
		return Session{}, err
	}
	if s.expire(ctx, sess) {
		return Session{}, fault.New(fault.NotFound, "your session ended (idle or too old); call computer_session_start")
	}
	if sess.State != SessionLive {
		return Session{}, fault.New(fault.Conflict, "your session is %s; wait for it or stop it", sess.State)
	}
	return sess, nil
}

// StopSession stops the caller's session and removes its container.
func (s *Service) StopSession(ctx context.Context, c caller, id string) (string, error) {
	return s.stop(ctx, c, id, EndByEmployee)
}

// stop ends c's open session id (any, when id is empty) for reason (an
// end-reason code).
func (s *Service) stop(ctx context.Context, c caller, id, reason string) (string, error) {
	sess, err := s.sessions.OpenSession(ctx, c.tenant, c.agent)
	if fault.Is(err, fault.NotFound) {
		return "", fault.New(fault.NotFound, "you have no live session to stop")
	}
	if err != nil {
		return "", err
	}
	if id != "" && !strings.EqualFold(id, sess.ID.String()) {
		return "", fault.New(fault.NotFound, "session %q is not your open session", id)
	}
	if sess.Worker != "" && s.driver != nil {
		err := s.driver.Stop(ctx, Ref{Tenant: c.tenant, Session: sess.ID, Worker: sess.Worker})
		switch {
		case err == nil, wrapLost(err):
		case fault.Is(err, fault.Unavailable):
			// The worker cannot be reached: the session ends here, and that
			// worker's janitor removes the idle container.
			s.log.WarnContext(ctx, "stop a session on an unreachable worker", "session", sess.ID, "worker", sess.Worker, "err", err)
		default:
			return "", err
		}
	}
	s.logEnd(context.WithoutCancel(ctx), sess, SessionStopped, reason)
	return sess.ID.String(), nil
}

// EventLost is the audit event of a call that found its session lost.
const EventLost = "computer_session_lost"

// lost ends a session whose worker or container is gone (which releases
// its workspace lease) and tells the caller what to do next.
func (s *Service) lost(ctx context.Context, sess Session, cause error) error {
	s.log.WarnContext(ctx, "computer-use session lost", "tenant", sess.TenantID, "session", sess.ID, "worker", sess.Worker, "err", cause)
	s.logEnd(context.WithoutCancel(ctx), sess, SessionLost, EndWorkerLost)
	return &tools.EventError{Event: EventLost, Err: fault.New(fault.Unavailable,
		"your session %s was lost: the worker holding it, or its browser, is gone. Its workspace is released; call computer_session_start to start a new session", sess.ID)}
}

// keepScreenshot keeps a masked screenshot as the session's latest, for
// the dashboard; a failure only costs the dashboard its picture.
func (s *Service) keepScreenshot(ctx context.Context, sess Session, o Outcome) {
	if len(o.PNG) > MaxStoredScreenshot {
		return
	}
	shot := Screenshot{PNG: o.PNG, Width: sess.Width, Height: sess.Height, Masked: o.Masked, FullyMasked: o.FullyMasked, TakenAt: s.now()}
	if err := s.sessions.SaveScreenshot(ctx, sess.TenantID, sess.ID, shot); err != nil {
		s.log.WarnContext(ctx, "keep a session's latest screenshot", "session", sess.ID, "err", err)
	}
}

// LatestScreenshot returns the latest masked screenshot of a tenant's open
// session, for the dashboard; fault.NotFound when the session is not open
// (or not the tenant's) or has taken none.
func (s *Service) LatestScreenshot(ctx context.Context, tenantID, sessionID uuid.UUID) (Screenshot, error) {
	shot, err := s.sessions.LatestScreenshot(ctx, tenantID, sessionID)
	if fault.Is(err, fault.NotFound) {
		return Screenshot{}, fault.New(fault.NotFound, "no screenshot of a live session %s", sessionID)
	}
	return shot, err
}

// noSession is the answer to a call with no open session: "lost" when the
// employee's last session was lost within the session lifetime (a janitor
// may have found its worker dead before this call did).
func (s *Service) noSession(ctx context.Context, c caller) error {
	last, err := s.sessions.LastSession(ctx, c.tenant, c.agent)
	if err == nil && last.State == SessionLost && s.now().Sub(last.StartedAt) <= SessionLifetime {
		return &tools.EventError{Event: EventLost, Err: fault.New(fault.Unavailable,
			"your session %s was lost (%s). Its workspace is released; call computer_session_start to start a new session", last.ID, EndReasonText(last.EndReason))}
	}
	return fault.New(fault.NotFound, "you have no live session; call computer_session_start")
}
