package responsibilities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/injection"
	"github.com/visorhq/visor/services/tools"
)

// Code is one of the closed error codes of the responsibility tools. A
// refused call's message starts with its code ("invalid_due_at: …").
type Code string

// The closed error codes.
const (
	NotFound              Code = "not_found"
	NotActive             Code = "not_active"
	NoOpenOccurrence      Code = "no_open_occurrence"
	InvalidDueAt          Code = "invalid_due_at"
	PeriodOccurrenceLimit Code = "period_occurrence_limit"
	AgentFollowupLimit    Code = "agent_followup_limit"
	EpochChanged          Code = "epoch_changed"
	InvalidQuestion       Code = "invalid_question"
)

// Error is a refusal carrying a closed code. It wraps a fault.Error, so
// the MCP endpoint answers it as an isError result with its message.
type Error struct {
	Code Code
	err  *fault.Error
}

func (e *Error) Error() string { return e.err.Error() }
func (e *Error) Unwrap() error { return e.err }

func fail(code Code, fc fault.Code, format string, args ...any) error {
	return &Error{Code: code, err: fault.New(fc, "%s: %s", code, fmt.Sprintf(format, args...))}
}

// CodeOf returns err's closed code, "" when it carries none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Limits of a question.
const (
	MaxQuestion = 1000 // characters
	MaxOptions  = 5
	MaxOption   = 1000 // characters
	DefaultTTL  = 24 * time.Hour
	MinTTL      = time.Minute
)

// Relations is the delegation policy (agents.Delegation).
type Relations interface {
	Related(ctx context.Context, policy identity.DelegationPolicy, tenantID, caller, target uuid.UUID) (bool, error)
}

// Service applies the responsibility rules on top of a Store.
type Service struct {
	store     Store
	rel       Relations
	now       func() time.Time
	questions QuestionStore
	zones     ScheduleStore
	notices   NoticeStore
	notifier  Notifier
	ender     RoundEnder
}

// NewService returns the service.
func NewService(store Store, rel Relations) *Service {
	return &Service{store: store, rel: rel, now: time.Now}
}

// SetClock replaces the clock, for tests.
func (s *Service) SetClock(now func() time.Time) { s.now = now }

// Summary is what responsibility_get answers for one responsibility: the
// responsibility, the current window's usage, the open run and the live
// wake-up.
type Summary struct {
	Responsibility
	Window  Usage   `json:"window"`
	OpenRun *Run    `json:"open_run,omitempty"`
	Live    *Wakeup `json:"live_wakeup,omitempty"`
}

// visible loads a responsibility the caller may read: an operator any of
// its tenant's, an employee its own or one whose owner the delegation
// policy relates it to. Every other one reads as not_found.
func (s *Service) visible(ctx context.Context, sub *tools.Subject, id uuid.UUID) (Responsibility, error) {
	p := sub.Principal
	r, err := s.store.Responsibility(ctx, p.TenantID, id)
	if fault.Is(err, fault.NotFound) {
		return r, notFound(id)
	}
	if err != nil {
		return r, err
	}
	switch p.Kind {
	case identity.KindOperator:
		return r, nil
	case identity.KindEmployee:
		if r.AgentID == p.AgentID {
			return r, nil
		}
		ok, err := s.rel.Related(ctx, sub.Tenant.Settings.Delegation, p.TenantID, p.AgentID, r.AgentID)
		if err != nil {
			return r, err
		}
		if ok {
			return r, nil
		}
	}
	return Responsibility{}, notFound(id)
}

func notFound(id uuid.UUID) error {
	return fail(NotFound, fault.NotFound, "no responsibility %s is visible to this caller", id)
}

// Mine lists the caller's own responsibilities (an operator's: every one of
// the tenant), newest first, at most limit.
func (s *Service) Mine(ctx context.Context, sub *tools.Subject, limit int) ([]Responsibility, error) {
	p := sub.Principal
	f := Filter{Limit: limit}
	switch p.Kind {
	case identity.KindOperator:
	case identity.KindEmployee:
		f.Agent = p.AgentID
	default:
		return []Responsibility{}, nil
	}
	return s.store.ListResponsibilities(ctx, p.TenantID, f)
}

// Get returns a responsibility's summary.
func (s *Service) Get(ctx context.Context, sub *tools.Subject, id uuid.UUID) (Summary, error) {
	r, err := s.visible(ctx, sub, id)
	if err != nil {
		return Summary{}, err
	}
	return s.Summarize(ctx, r)
}

// Summarize returns r's summary: the current window's usage, the open run
// and the live wake-up.
func (s *Service) Summarize(ctx context.Context, r Responsibility) (Summary, error) {
	var err error
	sum := Summary{Responsibility: r}
	from, to := r.Window(s.now())
	if sum.Window, err = s.store.Usage(ctx, r.TenantID, r.ID, from, to); err != nil {
		return Summary{}, err
	}
	if run, err := s.store.OpenRunOf(ctx, r.TenantID, r.ID); err == nil {
		sum.OpenRun = &run
	} else if !fault.Is(err, fault.NotFound) {
		return Summary{}, err
	}
	if w, err := s.store.LiveWakeup(ctx, r.TenantID, r.ID); err == nil {
		sum.Live = &w
	} else if !fault.Is(err, fault.NotFound) {
		return Summary{}, err
	}
	return sum, nil
}

// owned loads a responsibility for a wake-up tool: only its owning
// employee may arm one; an operator key is refused (it would act as the
// employee).
func (s *Service) owned(ctx context.Context, sub *tools.Subject, id uuid.UUID, tool string) (Responsibility, error) {
	p := sub.Principal
	if p.Kind != identity.KindEmployee {
		return Responsibility{}, tools.Refused(tools.EventRelationshipRefused,
			tool+" is refused: only the AI employee that owns the responsibility arms its wake-ups; an operator key would be acting as the employee")
	}
	r, err := s.visible(ctx, sub, id)
	if err != nil {
		return r, err
	}
	if r.AgentID != p.AgentID {
		return r, tools.Refused(tools.EventRelationshipRefused,
			tool+" is refused: this responsibility belongs to another AI employee; only its owner arms its wake-ups")
	}
	return r, nil
}

// armable checks what every wake-up needs, on the locked row: an active
// responsibility, the owner's open run, opened in the current epoch.
func armable(a Armer) (Run, error) {
	r := a.Responsibility
	if r.Status != Active {
		return Run{}, fail(NotActive, fault.Conflict, "the responsibility is %s; only an active one takes wake-ups", r.Status)
	}
	if a.OpenRun == nil {
		return Run{}, fail(NoOpenOccurrence, fault.Conflict, "no run of this responsibility is open; wake-ups are armed from inside a run")
	}
	if a.OpenRun.Epoch != r.Epoch {
		return Run{}, fail(EpochChanged, fault.Conflict,
			"an operator changed the responsibility since this run opened (epoch %d, now %d); wait for the next run", a.OpenRun.Epoch, r.Epoch)
	}
	return *a.OpenRun, nil
}

func liveRefusal(w *Wakeup) error {
	return fail(AgentFollowupLimit, fault.Conflict,
		"the responsibility already holds a live %s (%s, due %s); at most one follow-up or question is pending at a time",
		w.Kind, w.ID, w.DueAt.UTC().Format(time.RFC3339))
}

// arm runs plan through the store, mapping a lost race on the live
// wake-up index to the same refusal the planner gives.
func (s *Service) arm(ctx context.Context, r Responsibility, plan func(Armer) (*Wakeup, error)) (Wakeup, error) {
	w, err := s.store.Arm(ctx, r.TenantID, r.ID, plan)
	if err != nil && CodeOf(err) == "" && fault.Is(err, fault.Conflict) {
		return w, fail(AgentFollowupLimit, fault.Conflict, "the responsibility already holds a live follow-up or question")
	}
	if fault.Is(err, fault.NotFound) && CodeOf(err) == "" {
		return w, notFound(r.ID)
	}
	return w, err
}

// Followup arms a one-shot follow-up at due. It is never moved: a time
// outside [now + min_wake_interval_secs, stop_at] is refused.
func (s *Service) Followup(ctx context.Context, sub *tools.Subject, id uuid.UUID, due time.Time) (Wakeup, error) {
	r, err := s.owned(ctx, sub, id, "responsibility_followup")
	if err != nil {
		return Wakeup{}, err
	}
	return s.arm(ctx, r, func(a Armer) (*Wakeup, error) {
		run, err := armable(a)
		if err != nil {
			return nil, err
		}
		r := a.Responsibility
		now := s.now()
		earliest := now.Add(time.Duration(r.MinWakeIntervalSecs) * time.Second)
		if due.Before(earliest) {
			return nil, fail(InvalidDueAt, fault.Invalid, "due_at must be at least %d seconds from now (not before %s)",
				r.MinWakeIntervalSecs, earliest.UTC().Format(time.RFC3339))
		}
		if r.StopAt != nil && due.After(*r.StopAt) {
			return nil, fail(InvalidDueAt, fault.Invalid, "due_at must not be after the responsibility's stop_at %s",
				r.StopAt.UTC().Format(time.RFC3339))
		}
		if a.Live != nil {
			return nil, liveRefusal(a.Live)
		}
		from, to := r.Window(due)
		u, err := a.Usage(from, to)
		if err != nil {
			return nil, err
		}
		if u.Runs+u.PendingFollowups >= r.RunLimit {
			return nil, fail(PeriodOccurrenceLimit, fault.Conflict,
				"the window %s-%s already holds its %d runs (opened or pending)", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), r.RunLimit)
		}
		if u.Followups >= r.FollowupLimit {
			return nil, fail(AgentFollowupLimit, fault.Conflict,
				"the window %s-%s already holds its %d follow-ups", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), r.FollowupLimit)
		}
		return &Wakeup{ID: uuid.New(), RunID: run.ID, Kind: Followup, Epoch: r.Epoch, DueAt: due.UTC(),
			CreatedBy: sub.Principal.ID()}, nil
	})
}

// NewQuestion is what responsibility_ask takes. TTL nil is DefaultTTL.
type NewQuestion struct {
	Text    string
	Options []string
	TTL     *time.Duration
}

func checkQuestion(q NewQuestion) error {
	if strings.TrimSpace(q.Text) == "" || !utf8.ValidString(q.Text) || utf8.RuneCountInString(q.Text) > MaxQuestion {
		return fail(InvalidQuestion, fault.Invalid, "question must be 1-%d characters of text", MaxQuestion)
	}
	if len(q.Options) > MaxOptions {
		return fail(InvalidQuestion, fault.Invalid, "at most %d options", MaxOptions)
	}
	for i, o := range q.Options {
		if strings.TrimSpace(o) == "" || !utf8.ValidString(o) || utf8.RuneCountInString(o) > MaxOption {
			return fail(InvalidQuestion, fault.Invalid, "option %d must be 1-%d characters of text", i+1, MaxOption)
		}
	}
	if q.TTL != nil && *q.TTL <= 0 {
		return fail(InvalidQuestion, fault.Invalid, "ttl_secs must be a positive number of seconds")
	}
	return nil
}

// Ask arms one question to the operators. Its lifetime is TTL held between
// MinTTL and the responsibility's stop_at.
func (s *Service) Ask(ctx context.Context, sub *tools.Subject, id uuid.UUID, q NewQuestion) (Wakeup, error) {
	r, err := s.owned(ctx, sub, id, "responsibility_ask")
	if err != nil {
		return Wakeup{}, err
	}
	if err := checkQuestion(q); err != nil {
		return Wakeup{}, err
	}
	return s.arm(ctx, r, func(a Armer) (*Wakeup, error) {
		run, err := armable(a)
		if err != nil {
			return nil, err
		}
		r := a.Responsibility
		now := s.now()
		ttl := DefaultTTL
		if q.TTL != nil {
			ttl = *q.TTL
		}
		ttl = max(ttl, MinTTL)
		if r.StopAt != nil {
			left := r.StopAt.Sub(now)
			if left < MinTTL {
				return nil, fail(InvalidQuestion, fault.Invalid, "the responsibility stops in under %d seconds, too soon for a question", int(MinTTL.Seconds()))
			}
			ttl = min(ttl, left)
		}
		if a.Live != nil {
			return nil, liveRefusal(a.Live)
		}
		opts := q.Options
		if opts == nil {
			opts = []string{}
		}
		// The question and its options are scanned together; a match is
		// shown to operators as a warning, never refused.
		flags := ruleStrings(injection.Scan(strings.Join(append([]string{q.Text}, opts...), "\n")))
		w := &Wakeup{ID: uuid.New(), RunID: run.ID, Kind: Question, Epoch: r.Epoch, DueAt: now.Add(ttl).UTC(),
			Question: q.Text, Options: opts, Flags: flags, CreatedBy: sub.Principal.ID()}
		if r.Notify.Enabled {
			// The window's pushes are counted under the same lock as the
			// question, so concurrent questions never pass the cap.
			from, to := r.Window(now)
			pushed, err := a.Notices(from, to)
			if err != nil {
				return nil, err
			}
			w.Notice = planNotice(r, *w, pushed, sub.Tenant.Settings.TimeZone, now)
		}
		return w, nil
	})
}
