package grants

import (
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// GoalTagPrefix starts a goal's tag that grants a scoped tool to the
// goal's assignee while the goal runs ("grant:execute_program"). Only
// operators place such tags (board.Protected).
const GoalTagPrefix = "grant:"

// GoalGranter is the granted_by of the grants a goal's tags hold, which
// tells them from the goal's other task-scoped grants.
func GoalGranter(goalID uuid.UUID) string { return "goal:" + goalID.String() }

// GoalTools returns the tool entries a goal's tags grant, in tag order,
// each once; a malformed entry grants nothing.
func GoalTools(tags []string) []string {
	var out []string
	for _, t := range tags {
		tool, ok := strings.CutPrefix(t, GoalTagPrefix)
		if ok && checkEntry(tool) == nil && !slices.Contains(out, tool) {
			out = append(out, tool)
		}
	}
	return out
}

// SyncGoal makes the grants a running goal's tags hold match the goal as
// it is now: one task-scoped grant (the goal's task, so it ends with the
// goal like every task-scoped grant) per tool GoalTools names, for the
// goal's assignee (none when unassigned). Grants for a former assignee or
// a removed tag are revoked; each grant started or ended is announced, so
// the employees' tool lists follow. The board calls it after every change
// to a goal's tags or assignee, with the goal read after the change.
func (s *Service) SyncGoal(ctx context.Context, tenantID, goalID, assignee uuid.UUID, tags []string) error {
	by := GoalGranter(goalID)
	held, err := s.store.ListGrants(ctx, tenantID, uuid.Nil, true)
	if err != nil {
		return err
	}
	want := GoalTools(tags)
	if assignee == uuid.Nil {
		want = nil
	}
	have := map[string]bool{}
	for _, g := range held {
		if g.TaskID != goalID || g.GrantedBy != by {
			continue
		}
		if g.AgentID == assignee && slices.Contains(want, g.Tool) && !have[g.Tool] {
			have[g.Tool] = true
			continue
		}
		// Another sync may have ended it first (Conflict): it is gone either way.
		if _, err := s.Revoke(ctx, tenantID, g.ID, by); err != nil && !fault.Is(err, fault.Conflict) {
			return err
		}
	}
	for _, tool := range want {
		if have[tool] {
			continue
		}
		g := Grant{ID: uuid.New(), TenantID: tenantID, AgentID: assignee, Tool: tool, TaskID: goalID, GrantedBy: by}
		v, err := s.store.CreateGrant(ctx, &g)
		if err != nil {
			return err
		}
		s.publish(ctx, tenantID, assignee, v)
	}
	return nil
}
