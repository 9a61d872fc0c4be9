package ui

import (
	"time"

	"context"
	"github.com/google/uuid"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/sandbox"
)

// triageCap bounds each count of the overview; beyond, it reads "cap+".
const triageCap = 200

// triage is the overview's "needs attention now": counts of what waits for
// a person, and refusals this hour against the hour before (the trend).
type triage struct {
	Pending, Questions, Blocked int
	// Failed script runs and computer sessions of the last day, and of
	// the day before (the trend).
	FailedRuns, FailedRunsBefore         int
	FailedSessions, FailedSessionsBefore int
	RefusalsHour, RefusalsBefore         int
	Cap                                  int
}

// Over reports whether n reached the cap (the count reads "n+").
func (t triage) Over(n int) bool { return n >= t.Cap }

func (d *Dashboard) triage(ctx context.Context, v *View, canAudit bool) (triage, error) {
	t := triage{Cap: triageCap}
	now := time.Now()
	if d.d.Grants != nil {
		rs, err := d.d.Grants.ListRequests(ctx, v.Tenant.ID, grants.Pending, nil, triageCap)
		if err != nil {
			return t, err
		}
		t.Pending = len(rs)
	}
	if d.d.Responsibilities != nil {
		qs, err := d.d.Responsibilities.Questions(ctx, v.Tenant.ID, uuid.Nil, nil, triageCap)
		if err != nil {
			return t, err
		}
		t.Questions = len(qs)
	}
	if d.d.Board != nil {
		ts, err := d.d.Board.ListTasks(ctx, v.Tenant.ID, board.TaskFilter{Status: board.Blocked, Limit: triageCap})
		if err != nil {
			return t, err
		}
		t.Blocked = len(ts)
	}
	if d.d.SandboxRuns != nil {
		runs, err := d.d.SandboxRuns.Runs(ctx, v.Tenant.ID, sandbox.RunFilter{Limit: triageCap})
		if err != nil {
			return t, err
		}
		for _, r := range runs {
			if r.State == sandbox.RunUnavailable || r.State == sandbox.RunFailed {
				dayOf(now, r.StartedAt, &t.FailedRuns, &t.FailedRunsBefore)
			}
		}
	}
	if d.d.ComputerSessions != nil {
		ss, err := d.d.ComputerSessions.TenantSessions(ctx, v.Tenant.ID, triageCap)
		if err != nil {
			return t, err
		}
		for _, s := range ss {
			if s.Failed() {
				dayOf(now, s.LastUsedAt, &t.FailedSessions, &t.FailedSessionsBefore)
			}
		}
	}
	if canAudit && d.d.AuditLog != nil {
		hour, err := d.d.AuditLog.List(ctx, v.Tenant.ID, audit.Filter{Outcome: audit.OutcomeRefused, Since: now.Add(-time.Hour), Limit: triageCap})
		if err != nil {
			return t, err
		}
		before, err := d.d.AuditLog.List(ctx, v.Tenant.ID, audit.Filter{Outcome: audit.OutcomeRefused, Since: now.Add(-2 * time.Hour), Until: now.Add(-time.Hour), Limit: triageCap})
		if err != nil {
			return t, err
		}
		t.RefusalsHour, t.RefusalsBefore = len(hour), len(before)
	}
	return t, nil
}

// dayOf counts at in today (the last 24 hours before now) or before (the
// 24 hours before those).
func dayOf(now, at time.Time, today, before *int) {
	switch {
	case at.After(now.Add(-24 * time.Hour)):
		*today++
	case at.After(now.Add(-48 * time.Hour)):
		*before++
	}
}
