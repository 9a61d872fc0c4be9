package knowledge

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// Hand-off limits.
const (
	// DefaultHandoffMaxBytes caps a hand-off's text, in bytes of UTF-8.
	DefaultHandoffMaxBytes = 16384
	// PlainNoteChars is where a plain note (no status) is cut.
	PlainNoteChars = 1200
	// minBlocker is the fewest characters a blocker may have: "blocked"
	// or "stuck" says nothing a person can act on.
	minBlocker = 8
)

// Status is a structured hand-off's state of the work.
type Status string

// Statuses; "" is a plain note.
const (
	Continue Status = "continue"
	Complete Status = "complete"
	Blocked  Status = "blocked"
)

// Handoff is what an employee leaves for its next round on a task.
type Handoff struct {
	TenantID  uuid.UUID `json:"-"`
	AgentID   uuid.UUID `json:"agent_id"`
	TaskID    uuid.UUID `json:"task_id"`
	Status    Status    `json:"status,omitempty"`
	Note      string    `json:"note,omitempty"`
	NextSteps []string  `json:"next_steps,omitempty"`
	Evidence  []string  `json:"evidence,omitempty"`
	Blocker   string    `json:"blocker,omitempty"`
	Bytes     int       `json:"bytes"`
	Truncated bool      `json:"truncated,omitempty"` // a plain note cut at PlainNoteChars
	Source    Source    `json:"source"`
	CreatedAt time.Time `json:"created_at"`
}

// HandoffInput is a working_state_handoff call.
type HandoffInput struct {
	Task      string // the task, when the credential is not a round's
	Status    Status
	Note      string
	NextSteps []string
	Evidence  []string
	Blocker   string
}

// generic blockers say nothing specific.
var generic = map[string]bool{"blocked": true, "stuck": true, "blocker": true, "unknown": true, "n/a": true, "na": true,
	"none": true, "tbd": true, "todo": true, "waiting": true, "error": true, "issue": true, "problem": true}

// Handoff validates and stores p's hand-off on its round's task (or the
// task it names outside a round). A plain note is cut at PlainNoteChars;
// a structured one is checked against its status; either is refused
// whole over the byte cap, never truncated.
func (s *Service) Handoff(ctx context.Context, p identity.Principal, callID uuid.UUID, in HandoffInput) (Handoff, error) {
	if !p.IsEmployee() {
		return Handoff{}, fault.New(fault.Forbidden, "working_state_handoff acts for the calling AI employee")
	}
	task := p.TaskID
	if in.Task != "" {
		id, err := uuid.Parse(in.Task)
		if err != nil {
			return Handoff{}, fault.New(fault.Invalid, "task must be a task id")
		}
		if task != uuid.Nil && id != task {
			return Handoff{}, fault.New(fault.Forbidden, "a round hands off only its own task; leave task empty")
		}
		task = id
	}
	if task == uuid.Nil {
		return Handoff{}, fault.New(fault.Invalid, "task is required outside a round")
	}
	h, err := s.checkHandoff(in)
	if err != nil {
		return Handoff{}, err
	}
	src, err := s.source(ctx, p, callID)
	if err != nil {
		return Handoff{}, err
	}
	h.TenantID, h.AgentID, h.TaskID, h.Source = p.TenantID, p.AgentID, task, src
	err = s.cfg.Store.PutHandoff(ctx, &h)
	if errors.Is(err, ErrForgotten) {
		return Handoff{}, fenced(MsgForgotten)
	}
	return h, err
}

// checkHandoff applies the mode rules and the byte cap.
func (s *Service) checkHandoff(in HandoffInput) (Handoff, error) {
	h := Handoff{Status: in.Status, Note: strings.TrimSpace(in.Note), NextSteps: trimAll(in.NextSteps),
		Evidence: trimAll(in.Evidence), Blocker: strings.TrimSpace(in.Blocker)}
	switch h.Status {
	case "":
		if len(h.NextSteps)+len(h.Evidence) > 0 || h.Blocker != "" {
			return Handoff{}, fault.New(fault.Invalid, "next_steps, evidence and blocker need a status (continue, complete or blocked); a plain note is note alone")
		}
		if h.Note == "" {
			return Handoff{}, fault.New(fault.Invalid, "note must not be empty")
		}
		if r := []rune(h.Note); len(r) > PlainNoteChars {
			h.Note, h.Truncated = string(r[:PlainNoteChars]), true
		}
	case Continue:
		if len(h.NextSteps) == 0 {
			return Handoff{}, fault.New(fault.Invalid, "status continue requires non-empty next_steps")
		}
		if h.Blocker != "" {
			return Handoff{}, fault.New(fault.Invalid, "status continue forbids blocker; use status blocked")
		}
	case Complete:
		if len(h.Evidence) == 0 {
			return Handoff{}, fault.New(fault.Invalid, "status complete requires non-empty evidence: \"I finished\" is not evidence")
		}
		if h.Blocker != "" || len(h.NextSteps) > 0 {
			return Handoff{}, fault.New(fault.Invalid, "status complete forbids blocker and next_steps: work with a next step or a blocker is not complete")
		}
	case Blocked:
		if len([]rune(h.Blocker)) < minBlocker || generic[strings.ToLower(strings.Trim(h.Blocker, " .!"))] {
			return Handoff{}, fault.New(fault.Invalid, "status blocked requires a specific blocker: say what blocks the work and what would unblock it")
		}
	default:
		return Handoff{}, fault.New(fault.Invalid, "status must be continue, complete or blocked, or omitted for a plain note")
	}
	h.Bytes = len(h.Status) + len(h.Note) + len(h.Blocker)
	for _, x := range append(append([]string{}, h.NextSteps...), h.Evidence...) {
		h.Bytes += len(x)
	}
	if h.Bytes > s.cfg.HandoffMaxBytes {
		return Handoff{}, fault.New(fault.TooLarge,
			"Not stored: the hand-off is %d bytes of UTF-8, over the %d-byte cap; it is refused whole, never truncated. Shorten it and call again.",
			h.Bytes, s.cfg.HandoffMaxBytes)
	}
	return h, nil
}

func trimAll(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
