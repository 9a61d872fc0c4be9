package responsibilities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

// ErrPushPermanent marks a push that no retry can deliver (the address is
// refused by the egress rules, the webhook redirects).
var ErrPushPermanent = errors.New("the push cannot be delivered")

// HeldError says a notice waits for the quiet hours to end; its job runs
// again at Until.
type HeldError struct{ Until time.Time }

func (e *HeldError) Error() string {
	return "held for quiet hours until " + e.Until.UTC().Format(time.RFC3339)
}

// PushBody is what a question's push posts to the webhook, signed like
// round deliveries (webhook-id is the notice's id, the same on every
// retry). It carries no secret: the question quoted and cut to Shown
// characters (or, for a flagged one, only a notice), whether the scan
// flagged it, and where to answer.
type PushBody struct {
	Type           string             `json:"type"`
	ID             uuid.UUID          `json:"id"`
	Tenant         string             `json:"tenant"`
	Responsibility PushResponsibility `json:"responsibility"`
	Question       PushQuestion       `json:"question"`
	// AnswerURL is the admin API route that answers the question;
	// DashboardURL the responsibility's page, with its open questions and
	// their answer forms.
	AnswerURL    string `json:"answer_url"`
	DashboardURL string `json:"dashboard_url"`
}

// PushResponsibility names the responsibility that asked.
type PushResponsibility struct {
	ID      uuid.UUID `json:"id"`
	Name    string    `json:"name"`
	AgentID uuid.UUID `json:"agent_id"`
}

// PushQuestion is the question as a push shows it.
type PushQuestion struct {
	ID        uuid.UUID `json:"id"`
	Quoted    string    `json:"quoted,omitempty"`
	Truncated bool      `json:"truncated,omitempty"`
	Options   []string  `json:"options,omitempty"`
	Flagged   bool      `json:"flagged"`
	Flags     []string  `json:"flags"`
	Warning   string    `json:"warning,omitempty"`
	Notice    string    `json:"notice,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PushType is the type of a question's push.
const PushType = "responsibility.question"

const flaggedNotice = "An AI employee asked a question that matched the prompt-injection scan; its text is not pushed. " +
	"Read it quoted, with the warning, in the dashboard or through the admin API."

func (s *Service) pushBody(t NoticeTarget) PushBody {
	q, r := t.Question, t.Responsibility
	shown := ShowQuestion(q)
	b := PushBody{Type: PushType, ID: t.Notice.ID, Tenant: t.TenantSlug,
		Responsibility: PushResponsibility{ID: r.ID, Name: r.Name, AgentID: r.AgentID},
		Question:       PushQuestion{ID: q.ID, Flagged: len(shown.Flags) > 0, Flags: shown.Flags, Warning: shown.Warning, ExpiresAt: q.DueAt},
		AnswerURL:      s.notifier.BaseURL + "/api/v1/tenants/" + url.PathEscape(t.TenantSlug) + "/questions/" + q.ID.String() + "/answer",
		DashboardURL:   s.notifier.BaseURL + "/t/" + url.PathEscape(t.TenantSlug) + "/dashboard/responsibilities/" + r.ID.String()}
	if t.Notice.Content == ContentNotice {
		b.Question.Notice = flaggedNotice
	} else {
		b.Question.Quoted, b.Question.Truncated, b.Question.Options = shown.Quoted, shown.Truncated, shown.Options
	}
	return b
}

// DeliverNotice works the job of one notice. A notice whose question
// settled first, or whose responsibility stopped pushing, is withdrawn; one
// inside the quiet hours is held (*HeldError: run the job again then);
// otherwise it is posted. A failed post is an error to retry; on the final
// attempt, or when no retry can help (ErrPushPermanent), the notice
// fails. Every outcome but a retry is audited with the state it records.
func (s *Service) DeliverNotice(ctx context.Context, tenantID, id uuid.UUID, final bool) error {
	t, err := s.notices.NoticeTarget(ctx, tenantID, id)
	if fault.Is(err, fault.NotFound) {
		return nil // deleted with its responsibility or tenant
	}
	if err != nil || !t.Notice.Live() {
		return err
	}
	now := s.now()
	switch {
	case t.Question.State != Pending:
		return s.settleNotice(ctx, t, NoticeUpdate{State: NoticeWithdrawn, Reason: ReasonSettled}, now)
	case !t.Responsibility.Notify.Enabled:
		return s.settleNotice(ctx, t, NoticeUpdate{State: NoticeWithdrawn, Reason: ReasonDisabled}, now)
	}
	if quiet, until := t.Responsibility.Notify.Quiet(t.TimeZone, now); quiet {
		if err := s.settleNotice(ctx, t, NoticeUpdate{State: NoticeHeld, Reason: ReasonQuietHours, SendAt: until}, now); err != nil {
			return err
		}
		return &HeldError{Until: until}
	}
	pushErr := s.post(ctx, t, now)
	if pushErr == nil {
		return s.settleNotice(ctx, t, NoticeUpdate{State: NoticeSent, Reason: "", Attempted: true}, now)
	}
	// Past its quiet hours, a push that failed is queued for its retry.
	u := NoticeUpdate{State: NoticeQueued, SendAt: now, Attempted: true, Error: pushErr.Error()}
	if final || errors.Is(pushErr, ErrPushPermanent) {
		u.State = NoticeFailed
	}
	return errors.Join(pushErr, s.settleNotice(ctx, t, u, now))
}

// settleNotice records u, audited when the state changes.
func (s *Service) settleNotice(ctx context.Context, t NoticeTarget, u NoticeUpdate, now time.Time) error {
	n := t.Notice
	n.State, n.Reason, n.LastError = u.State, u.Reason, u.Error
	if u.SendAt.IsZero() {
		u.SendAt = n.SendAt
	}
	var e = NoticeAudit(n, t.Question, now)
	if u.State == t.Notice.State {
		e = nil
	}
	_, err := s.notices.UpdateNotice(ctx, n.TenantID, n.ID, u, e)
	return err
}

// post sends the signed push.
func (s *Service) post(ctx context.Context, t NoticeTarget, now time.Time) error {
	if s.notifier.HTTP == nil {
		return fmt.Errorf("%w: this process has no webhook client", ErrPushPermanent)
	}
	body, err := json.Marshal(s.pushBody(t))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Responsibility.Notify.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPushPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Visor-Questions/1")
	rounds.SetHeaders(req.Header, t.Responsibility.Notify.Secret, t.Notice.ID.String(), now, body)
	res, err := s.notifier.HTTP.Do(req)
	if err != nil {
		msg := transportError(err)
		if fault.Is(err, fault.Forbidden) { // a refused address or a redirect
			return fmt.Errorf("%w: %s", ErrPushPermanent, msg)
		}
		return errors.New(msg)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 16<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("the webhook answered HTTP %d", res.StatusCode)
	}
	return nil
}

// transportError keeps what an operator needs of a failed request, never
// the URL (its query may hold the receiver's own token).
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}
