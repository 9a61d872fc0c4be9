package responsibilities

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// Wake-up jobs. A follow-up or a question gets a job at its due time (the
// question's is its expiry); a responsibility with a schedule holds one
// job at its next scheduled time, which arms the one after when it fires.
// The jobs live on the worker queue; these methods are what they do when
// they fire, re-reading everything, since an operator may have changed
// the responsibility since the job was armed.

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

// ScheduleStore reads what a scheduled run needs.
type ScheduleStore interface {
	// TimeZone returns the tenant's time zone setting ("" is UTC).
	TimeZone(ctx context.Context, tenantID uuid.UUID) (string, error)
}

// SetSchedules sets where the tenant's time zone is read.
func (s *Service) SetSchedules(z ScheduleStore) { s.zones = z }

// Tick is a scheduled run's job: the responsibility's schedule in the
// epoch it was armed in, due at At.
type Tick struct {
	TenantID         uuid.UUID
	ResponsibilityID uuid.UUID
	Epoch            int64
	At               time.Time
}

// FireSchedule works a scheduled run's job. It returns the next tick to
// arm (nil when the chain ends: the responsibility is gone, not active,
// changed since the tick was armed — the change armed a chain of its own —
// or its schedule has no later time before stop_at), and whether a run
// opened. The next tick is armed before the run opens, so a failure after
// it loses no later run; arming is unique per tick, so a retry arms it once.
func (s *Service) FireSchedule(ctx context.Context, t Tick, arm func(Tick) error) (bool, error) {
	r, err := s.store.Responsibility(ctx, t.TenantID, t.ResponsibilityID)
	if fault.Is(err, fault.NotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if r.Epoch != t.Epoch || r.Status != Active {
		return false, nil
	}
	// A tick that fires late (no worker ran) arms the next time after now:
	// missed times collapse into this one run instead of a burst.
	next, ok, err := s.NextTick(ctx, r, later(t.At, s.now()))
	if err != nil {
		return false, err
	}
	if ok {
		if err := arm(next); err != nil {
			return false, err
		}
	}
	_, err = s.Open(ctx, t.TenantID, t.ResponsibilityID, Wake{Reason: BySchedule, Epoch: t.Epoch})
	var skip *SkipError
	if errors.As(err, &skip) {
		return false, nil
	}
	return err == nil, err
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// NextTick returns the responsibility's first scheduled tick after after,
// in its current epoch; false when it has none (no schedule, not active,
// nothing before stop_at).
func (s *Service) NextTick(ctx context.Context, r Responsibility, after time.Time) (Tick, bool, error) {
	if r.Status != Active || r.Schedule == "" {
		return Tick{}, false, nil
	}
	tz, err := s.zones.TimeZone(ctx, r.TenantID)
	if err != nil {
		return Tick{}, false, err
	}
	at, ok := r.NextScheduled(tz, after)
	if !ok {
		return Tick{}, false, nil
	}
	return Tick{TenantID: r.TenantID, ResponsibilityID: r.ID, Epoch: r.Epoch, At: at}, true, nil
}
