package responsibilities

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Scheduled runs. A responsibility with a schedule holds its next tick on
// its own row (the store's next_tick_at): set when it is created or
// changed, in the epoch of the change, and cleared when it is paused,
// stopped or past stop_at. Workers claim due ticks in sets, each set under
// its rows' locks in one transaction that writes every run, task, round,
// skip and next tick of the set, so a tick fires once however many workers
// claim, and a burst at the top of the hour takes a few transactions per
// set instead of several per run.

// DueTick is one responsibility whose tick came, as the store read it
// under the row lock: what a run's planner needs (the Opening, without
// Usage), the tick's time, the usage of the window holding the claim's
// time and the settled questions no run was told of yet.
type DueTick struct {
	Opening
	At     time.Time
	Window Usage
	Told   []Wakeup
}

// TickOutcome is what to write for one DueTick: a run (Plan) or a skip,
// the next tick (nil when the schedule has none left) and the questions
// the run tells of (to mark reported).
type TickOutcome struct {
	Plan *RunPlan
	Skip *Skip
	Next *time.Time
	Told []uuid.UUID
}

// ScheduleStore claims due ticks.
type ScheduleStore interface {
	// FireDueTicks locks up to limit responsibilities whose tick is due at
	// now, skipping rows another worker holds, hands them to plan in one
	// call and writes its outcomes (one per DueTick, in order) in the same
	// transaction: each Plan's open run closed, its task, round (its
	// wake-up, queued) and run; each skip; each next tick. It returns the
	// ticks it claimed and the open runs it closed.
	FireDueTicks(ctx context.Context, now time.Time, limit int, plan func([]DueTick) ([]TickOutcome, error)) (claimed int, closed []Run, err error)
}

// SetSchedules sets where due ticks are claimed.
func (s *Service) SetSchedules(z ScheduleStore) { s.zones = z }

// MaxTickBatch bounds the ticks one FireDueTicks call claims.
const MaxTickBatch = 5000

// FireDueTicks opens the runs of up to limit due ticks in one transaction
// and reports how many it claimed; fewer than limit means none is left
// due. A tick that may not open a run (the gate, the window's run limit or
// spend cap) records a skip, as any wake-up does. A tick that fires late
// (no worker ran) arms the next time after now: missed times collapse into
// this one run instead of a burst. Runs still open are closed and their
// rounds ended after the commit.
func (s *Service) FireDueTicks(ctx context.Context, limit int) (int, error) {
	limit = min(max(limit, 1), MaxTickBatch)
	now := s.now()
	claimed, closed, err := s.zones.FireDueTicks(ctx, now, limit, func(due []DueTick) ([]TickOutcome, error) {
		return s.planTicks(due, now)
	})
	if err != nil {
		return claimed, err
	}
	for _, run := range closed {
		if err := s.endRounds(ctx, run); err != nil {
			return claimed, err
		}
	}
	return claimed, nil
}

// nextKey memoizes the next scheduled time within one set: a burst shares
// a handful of schedules, zones and times.
type nextKey struct {
	schedule, tz string
	after        time.Time
}

func (s *Service) planTicks(due []DueTick, now time.Time) ([]TickOutcome, error) {
	out := make([]TickOutcome, len(due))
	nexts := map[nextKey]time.Time{}
	for i, d := range due {
		r := d.Responsibility
		if next, ok := nextTick(nexts, r, d.TimeZone, later(d.At, now)); ok {
			out[i].Next = &next
		}
		w := Wake{Reason: BySchedule, Epoch: r.Epoch}
		for _, q := range d.Told {
			w.Data = append(w.Data, QuestionData(q))
		}
		p, skip, err := s.decide(d.Opening, w, now, func(time.Time, time.Time) (Usage, error) { return d.Window, nil })
		if err != nil {
			return nil, err
		}
		out[i].Plan, out[i].Skip = p, skip
		if p != nil {
			for _, q := range d.Told {
				out[i].Told = append(out[i].Told, q.ID)
			}
		}
	}
	return out, nil
}

// nextTick returns r's first scheduled time after after, while it is
// active and before stop_at.
func nextTick(memo map[nextKey]time.Time, r Responsibility, tz string, after time.Time) (time.Time, bool) {
	if r.Status != Active || r.Schedule == "" {
		return time.Time{}, false
	}
	k := nextKey{r.Schedule, tz, after}
	next, ok := memo[k]
	if !ok {
		next, ok = Responsibility{Schedule: r.Schedule}.NextScheduled(tz, after)
		if !ok {
			return time.Time{}, false
		}
		memo[k] = next
	}
	if r.StopAt != nil && next.After(*r.StopAt) {
		return time.Time{}, false
	}
	return next, true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
