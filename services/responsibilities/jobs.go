package responsibilities

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// Wake-up jobs. A follow-up or a question gets a job at its due time (the
// question's is its expiry). The jobs live on the worker queue; these
// methods are what they do when they fire, re-reading everything, since an
// operator may have changed the responsibility since the job was armed.
// Scheduled runs take no job each: ticks.go claims them in sets.

// FireWakeup works the job of a follow-up or a question at its due time.
// A follow-up opens a run (reason followup) unless it was settled
// meanwhile; a wake-up armed in an older epoch opens none and is recorded
// as skipped with epoch_changed. A question still pending expires, and
// the next run is told so. It reports whether a run opened; an error
// means the job should be retried.
func (s *Service) FireWakeup(ctx context.Context, tenantID, id uuid.UUID) (bool, error) {
	w, err := s.questions.Wakeup(ctx, tenantID, id)
	if fault.Is(err, fault.NotFound) {
		return false, nil // its responsibility was deleted
	}
	if err != nil || w.State != Pending {
		return false, err
	}
	if w.Kind == Question {
		_, err := s.questions.Settle(ctx, tenantID, id, Expired)
		return false, err
	}
	ok, err := s.questions.Settle(ctx, tenantID, id, Fired)
	if err != nil || !ok {
		return false, err
	}
	_, err = s.Open(ctx, tenantID, w.ResponsibilityID, Wake{Reason: ByFollowup, Epoch: w.Epoch})
	var skip *SkipError
	if errors.As(err, &skip) {
		return false, nil // recorded as a skip
	}
	if err != nil {
		// Put it back so the retry fires it; a failure to do so leaves it
		// fired, and the error is the job's.
		return false, errors.Join(err, s.questions.Unsettle(ctx, tenantID, id, Fired))
	}
	return true, nil
}
