package workspace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// taskArgs are task_manage's arguments.
type taskArgs struct {
	Action      string          `json:"action"`
	TaskID      string          `json:"task_id"`
	Title       string          `json:"title"`
	Steps       []string        `json:"steps"`
	Note        string          `json:"note"`
	StepsDone   []int           `json:"steps_done"`
	Reason      string          `json:"reason"`
	Summary     string          `json:"summary"`
	Evidence    []evidenceInput `json:"evidence"`
	State       string          `json:"state"`
	Limit       int             `json:"limit"`
	BoardTaskID string          `json:"board_task_id"`
}

type evidenceInput struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

var evidenceKinds = []string{"command", "test", "file", "artifact", "url", "observation"}

func text(name, v string, required bool) error {
	v = strings.TrimSpace(v)
	if required && v == "" {
		return fault.New(fault.Invalid, "%s is required", name)
	}
	if utf8.RuneCountInString(v) > MaxTaskText {
		return fault.New(fault.TooLarge, "%s must be at most %d characters", name, MaxTaskText)
	}
	return nil
}

func (a taskArgs) evidence(now func() Evidence) ([]Evidence, error) {
	if len(a.Evidence) > 50 {
		return nil, fault.New(fault.Invalid, "at most 50 evidence entries per call")
	}
	out := make([]Evidence, 0, len(a.Evidence))
	for _, e := range a.Evidence {
		if !slices.Contains(evidenceKinds, e.Kind) {
			return nil, fault.New(fault.Invalid, "evidence kind must be one of %s", strings.Join(evidenceKinds, ", "))
		}
		if err := text("evidence detail", e.Detail, true); err != nil {
			return nil, err
		}
		ev := now()
		ev.Kind, ev.Detail = e.Kind, strings.TrimSpace(e.Detail)
		out = append(out, ev)
	}
	return out, nil
}

func (s *Service) taskTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	p := c.Principal()
	if p.Kind != identity.KindEmployee {
		return nil, errNotEmployee
	}
	var a taskArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	switch a.Action {
	case "create":
		return s.taskCreate(ctx, p, a)
	case "list":
		return s.taskList(ctx, p, a)
	case "get", "checkpoint", "block", "resume", "final_review", "complete":
	default:
		return nil, fault.New(fault.Invalid, "action must be create, list, get, checkpoint, block, resume, final_review or complete")
	}
	id, err := uuid.Parse(a.TaskID)
	if err != nil {
		return nil, fault.New(fault.NotFound, "task not found")
	}
	if a.Action == "get" {
		t, err := s.cfg.Tasks.Task(ctx, p.TenantID, p.AgentID, id)
		if err != nil {
			return nil, err
		}
		return taskResult(t, "task "+t.State), nil
	}
	now := s.cfg.Now().UTC()
	evs, err := a.evidence(func() Evidence { return Evidence{At: now} })
	if err != nil {
		return nil, err
	}
	t, err := s.cfg.Tasks.UpdateTask(ctx, p.TenantID, p.AgentID, id, func(t *Task) error { return applyTask(t, a, evs, now) })
	if err != nil {
		return nil, err
	}
	return taskResult(t, a.Action+" recorded; task "+t.State), nil
}

func (s *Service) taskCreate(ctx context.Context, p identity.Principal, a taskArgs) (*tools.Result, error) {
	if err := text("title", a.Title, true); err != nil {
		return nil, err
	}
	if len(a.Steps) > MaxTaskSteps {
		return nil, fault.New(fault.Invalid, "at most %d steps", MaxTaskSteps)
	}
	t := &Task{TenantID: p.TenantID, AgentID: p.AgentID, ID: uuid.New(), Title: strings.TrimSpace(a.Title), State: TaskActive, Steps: []Step{}}
	for _, st := range a.Steps {
		if err := text("step", st, true); err != nil {
			return nil, err
		}
		t.Steps = append(t.Steps, Step{Title: strings.TrimSpace(st)})
	}
	fromRound := false
	switch {
	case a.BoardTaskID != "":
		id, err := uuid.Parse(a.BoardTaskID)
		if err != nil {
			return nil, fault.New(fault.Invalid, "board_task_id must be a task id")
		}
		t.BoardTaskID = &id
	case p.TaskID != uuid.Nil: // the round's task, from the credential
		id := p.TaskID
		t.BoardTaskID, fromRound = &id, true
	}
	err := s.cfg.Tasks.CreateTask(ctx, t)
	if fromRound && fault.Is(err, fault.NotFound) { // the round's task is gone: track it unlinked
		t.BoardTaskID = nil
		err = s.cfg.Tasks.CreateTask(ctx, t)
	}
	if err != nil {
		return nil, err
	}
	return taskResult(*t, "task created"), nil
}

func (s *Service) taskList(ctx context.Context, p identity.Principal, a taskArgs) (*tools.Result, error) {
	switch a.State {
	case "", TaskActive, TaskBlocked, TaskReview, TaskCompleted:
	default:
		return nil, fault.New(fault.Invalid, "state must be active, blocked, review or completed")
	}
	limit := bound(a.Limit, DefaultTaskLimit, 200)
	list, err := s.cfg.Tasks.Tasks(ctx, p.TenantID, p.AgentID, a.State, limit)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(list))
	var b strings.Builder
	fmt.Fprintf(&b, "%d task(s)\n", len(list))
	for _, t := range list {
		done := 0
		for _, st := range t.Steps {
			if st.Done {
				done++
			}
		}
		out = append(out, map[string]any{"task_id": t.ID, "title": t.Title, "state": t.State, "steps_done": done, "steps": len(t.Steps),
			"updated_at": t.UpdatedAt, "board_task_id": t.BoardTaskID})
		fmt.Fprintf(&b, "%s\t%s\t%d/%d\t%s\n", t.ID, t.State, done, len(t.Steps), t.Title)
	}
	return &tools.Result{Text: b.String(), Structured: map[string]any{"tasks": out}}, nil
}

// applyTask is the state machine of one task action.
func applyTask(t *Task, a taskArgs, evs []Evidence, now time.Time) error {
	if t.State == TaskCompleted {
		return fault.New(fault.Conflict, "the task is completed; create a new one")
	}
	if len(t.Evidence)+len(evs) > MaxTaskEvidence || len(t.Checkpoints)+len(t.Blockers) >= MaxTaskEntries {
		return fault.New(fault.TooLarge, "the task holds as much history as it may; complete it and start a new one")
	}
	switch a.Action {
	case "checkpoint":
		if err := text("note", a.Note, len(a.StepsDone) == 0 && len(evs) == 0); err != nil {
			return err
		}
		for _, n := range a.StepsDone {
			if n < 1 || n > len(t.Steps) {
				return fault.New(fault.Invalid, "steps_done holds %d; the task has steps 1-%d", n, len(t.Steps))
			}
			t.Steps[n-1].Done = true
		}
		t.Checkpoints = append(t.Checkpoints, Checkpoint{At: now, Note: strings.TrimSpace(a.Note), StepsDone: a.StepsDone})
		if a.Note != "" {
			t.Progress = strings.TrimSpace(a.Note)
		}
	case "block":
		if err := text("reason", a.Reason, true); err != nil {
			return err
		}
		t.State = TaskBlocked
		t.Blockers = append(t.Blockers, Blocker{At: now, Reason: strings.TrimSpace(a.Reason)})
	case "resume":
		if t.State != TaskBlocked && t.State != TaskReview {
			return fault.New(fault.Conflict, "the task is %s; only a blocked or reviewed task resumes", t.State)
		}
		for i := range t.Blockers {
			if t.Blockers[i].ResolvedAt == nil {
				at := now
				t.Blockers[i].ResolvedAt, t.Blockers[i].Resolution = &at, strings.TrimSpace(a.Note)
			}
		}
		t.State = TaskActive
	case "final_review":
		if err := text("summary", a.Summary, true); err != nil {
			return err
		}
		if t.State == TaskBlocked {
			return fault.New(fault.Conflict, "the task is blocked; resume it first")
		}
		t.State, t.Review = TaskReview, &Review{At: now, Summary: strings.TrimSpace(a.Summary)}
	case "complete":
		if t.State == TaskBlocked {
			return fault.New(fault.Conflict, "the task is blocked; resume it first")
		}
		if len(t.Evidence)+len(evs) == 0 {
			return fault.New(fault.Invalid, "complete needs verification evidence: pass evidence (what you ran or checked and what it showed), or record it with checkpoint or final_review first")
		}
		if err := text("summary", a.Summary, false); err != nil {
			return err
		}
		if a.Summary != "" {
			t.Progress = strings.TrimSpace(a.Summary)
		}
		at := now
		t.State, t.CompletedAt = TaskCompleted, &at
	}
	t.Evidence = append(t.Evidence, evs...)
	return nil
}

func taskResult(t Task, head string) *tools.Result {
	done := 0
	for _, st := range t.Steps {
		if st.Done {
			done++
		}
	}
	text := fmt.Sprintf("%s: %q %d/%d steps done, %d evidence (task_id %s)", head, t.Title, done, len(t.Steps), len(t.Evidence), t.ID)
	return &tools.Result{Text: text, Structured: t, Note: map[string]any{"task_id": t.ID.String(), "state": t.State}}
}
