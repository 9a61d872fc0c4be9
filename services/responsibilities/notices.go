package responsibilities

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/audit"
)

// NoticeState is where the push of one question stands.
type NoticeState string

// Notice states. Queued and held are live: a job will try to send them.
const (
	NoticeQueued    NoticeState = "queued"
	NoticeHeld      NoticeState = "held" // quiet hours; sent when they end
	NoticeSent      NoticeState = "sent"
	NoticeRefused   NoticeState = "refused" // a gate or the cap stopped it
	NoticeFailed    NoticeState = "failed"  // the webhook kept failing
	NoticeWithdrawn NoticeState = "withdrawn"
)

// Reasons a notice was refused, held or withdrawn.
const (
	ReasonFlagged    = "flagged"          // the scan flagged the question and notify.flagged is skip
	ReasonCap        = "cap"              // the window already holds max_notifications_per_window pushes
	ReasonQuietHours = "quiet_hours"      // held until the quiet hours end
	ReasonSettled    = "question_settled" // answered, expired or withdrawn before it went out
	ReasonDisabled   = "disabled"         // pushing was turned off before it went out
)

// What a push carries.
const (
	ContentText   = "text"   // the question quoted and cut, with its options
	ContentNotice = "notice" // only that a flagged question waits
)

// Notice is the push of one question to the responsibility's webhook.
type Notice struct {
	ID               uuid.UUID   `json:"id"`
	TenantID         uuid.UUID   `json:"-"`
	ResponsibilityID uuid.UUID   `json:"responsibility_id"`
	QuestionID       uuid.UUID   `json:"question_id"`
	State            NoticeState `json:"state"`
	Reason           string      `json:"reason,omitempty"`
	Content          string      `json:"content"`
	SendAt           time.Time   `json:"send_at"`
	Attempts         int         `json:"attempts"`
	LastError        string      `json:"last_error,omitempty"`
	CreatedAt        time.Time   `json:"created_at"`
	SettledAt        *time.Time  `json:"settled_at,omitempty"`
}

// Live reports whether a job will still try to send it.
func (n Notice) Live() bool { return n.State == NoticeQueued || n.State == NoticeHeld }

// planNotice decides, in the transaction that stores question q, what its
// push is: nothing when r does not push; refused by the flagged gate or
// the window's cap (pushed counts the window's pushes so far); held until
// the quiet hours end; else queued now.
func planNotice(r Responsibility, q Wakeup, pushed int, tz string, now time.Time) *Notice {
	if !r.Notify.Enabled {
		return nil
	}
	n := &Notice{ID: uuid.New(), TenantID: r.TenantID, ResponsibilityID: r.ID, QuestionID: q.ID, State: NoticeQueued,
		Content: ContentText, SendAt: now, CreatedAt: now}
	if len(q.Flags) > 0 {
		n.Content = ContentNotice
		if r.Notify.Flagged == FlaggedSkip {
			n.State, n.Reason = NoticeRefused, ReasonFlagged
			return n
		}
	}
	if pushed >= r.Notify.MaxPerWindow {
		n.State, n.Reason = NoticeRefused, ReasonCap
		return n
	}
	if quiet, until := r.Notify.Quiet(tz, now); quiet {
		n.State, n.Reason, n.SendAt = NoticeHeld, ReasonQuietHours, until
	}
	return n
}

// Audit events of pushes, on the asking employee's behalf.
const (
	EventPushSent      = "question_push_sent"
	EventPushRefused   = "question_push_refused"
	EventPushHeld      = "question_push_held"
	EventPushFailed    = "question_push_failed"
	EventPushWithdrawn = "question_push_withdrawn"
)

// NoticeAudit is the audit row of a notice reaching state: a push sent,
// refused (by a gate or the cap), held, failed or withdrawn. It is written
// in the transaction that records the state.
func NoticeAudit(n Notice, q Wakeup, at time.Time) *audit.Entry {
	e := &audit.Entry{ID: audit.NewID(), TenantID: n.TenantID, PrincipalKind: "employee", PrincipalID: q.CreatedBy, Tool: "responsibility_ask",
		Source: audit.SourceMCP, Object: "question:" + q.ID.String(), At: at, Message: "question push " + string(n.State)}
	if n.Reason != "" {
		e.Message += ": " + n.Reason
	}
	switch n.State {
	case NoticeSent:
		e.Outcome, e.Event = audit.OutcomeOK, EventPushSent
	case NoticeRefused:
		e.Outcome, e.Event = audit.OutcomeRefused, EventPushRefused
	case NoticeHeld:
		e.Outcome, e.Event = audit.OutcomeOK, EventPushHeld
	case NoticeFailed:
		e.Outcome, e.Event = audit.OutcomeFailed, EventPushFailed
		e.Message += ": " + n.LastError
	case NoticeWithdrawn:
		e.Outcome, e.Event = audit.OutcomeOK, EventPushWithdrawn
	default:
		return nil
	}
	return e
}

// Doer sends HTTP requests to operators' webhooks; it must guard against
// SSRF (egress.Client).
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Notifier is how the service pushes questions.
type Notifier struct {
	HTTP Doer
	// CheckURL applies the deployment's egress rules to a webhook URL
	// (egress.CheckURL); nil refuses every URL.
	CheckURL func(raw string) (string, error)
	// BaseURL is where the answer links of a push point.
	BaseURL string
}

// SetNotifier sets how questions are pushed.
func (s *Service) SetNotifier(n Notifier) { s.notifier = n }

// NoticeTarget is what sending one notice needs, read in one go: the
// notice, its question, the responsibility with its signing secret, and
// the tenant's slug and time zone.
type NoticeTarget struct {
	Notice         Notice
	Question       Wakeup
	Responsibility Responsibility
	TenantSlug     string
	TimeZone       string
}

// NoticeUpdate is a notice's next state. Attempted counts one more try.
type NoticeUpdate struct {
	State     NoticeState
	Reason    string
	SendAt    time.Time
	Attempted bool
	Error     string
}

// NoticeStore persists notices. Every method takes the tenant; another
// tenant's row is fault.NotFound.
type NoticeStore interface {
	NoticeTarget(ctx context.Context, tenantID, id uuid.UUID) (NoticeTarget, error)
	// UpdateNotice moves a live notice to u, writing e (when not nil) to
	// the audit trail in the same transaction; false when the notice was
	// no longer live.
	UpdateNotice(ctx context.Context, tenantID, id uuid.UUID, u NoticeUpdate, e *audit.Entry) (bool, error)
	// Notices lists a responsibility's notices, newest first.
	Notices(ctx context.Context, tenantID, responsibilityID uuid.UUID, after *RunPosition, limit int) ([]Notice, error)
}

// SetNotices sets the store of notices.
func (s *Service) SetNotices(n NoticeStore) { s.notices = n }

// Notices lists a responsibility's pushes, newest first: what was sent,
// held, refused (and why), failed or withdrawn.
func (s *Service) Notices(ctx context.Context, tenantID, responsibilityID uuid.UUID, after *RunPosition, limit int) ([]Notice, error) {
	if s.notices == nil {
		return []Notice{}, nil
	}
	return s.notices.Notices(ctx, tenantID, responsibilityID, after, limit)
}
