package responsibilities

import (
	"context"
	"errors"
	"slices"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
)

var _ board.RunEvents = (*Service)(nil)

// TaskEvent hears a board event on taskID (board.RunEvents). When the task
// is a run's own task and it is done, the run closes. When it is a task
// under a run and the run's responsibility subscribes to the event, a run
// opens for it (reason event), unless one is open already: the open run
// sees the board itself. A wake-up refused by a limit is recorded as a
// skip, as for any other reason.
func (s *Service) TaskEvent(ctx context.Context, tenantID, taskID uuid.UUID, event string) error {
	runTask, ok, err := s.store.RunTaskOf(ctx, tenantID, uuid.Nil, taskID)
	if err != nil || !ok {
		return err
	}
	run, err := s.store.RunByTask(ctx, tenantID, runTask)
	if err != nil {
		return err
	}
	if runTask == taskID {
		if event == string(OnTaskDone) && run.ClosedAt == nil {
			_, err := s.CloseRun(ctx, tenantID, run.ID)
			if fault.Is(err, fault.Conflict) {
				return nil // closed meanwhile
			}
			return err
		}
		return nil
	}
	r, err := s.store.Responsibility(ctx, tenantID, run.ResponsibilityID)
	if err != nil || !slices.Contains(r.Subscriptions, event) {
		return err
	}
	if _, err := s.store.OpenRunOf(ctx, tenantID, r.ID); err == nil || !fault.Is(err, fault.NotFound) {
		return err
	}
	_, err = s.Open(ctx, tenantID, r.ID, Wake{Reason: ByEvent})
	var skip *SkipError
	if errors.As(err, &skip) {
		return nil
	}
	return err
}
