package responsibilities_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/responsibilities"
)

func draft(f *fixture, edit ...func(*responsibilities.Draft)) responsibilities.Draft {
	d := responsibilities.Draft{AgentID: f.adaID, Name: "inbox", Charter: "answer the inbox", Schedule: "0 9 * * 1-5", SpendCapCents: 1000}
	for _, e := range edit {
		e(&d)
	}
	return d
}

func TestCreateChecksWhatOperatorsSet(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r, err := f.svc.Create(f.ctx, f.acme.ID, "Asia/Tokyo", "operator:k", draft(f))
	require.NoError(t, err)
	require.Equal(t, int64(1), r.Epoch)
	require.Equal(t, responsibilities.Active, r.Status)
	require.Equal(t, responsibilities.DefaultRunLimit, r.RunLimit)
	require.Equal(t, responsibilities.DefaultFollowupLimit, r.FollowupLimit)
	require.Equal(t, f.clock(), r.WindowAnchor.UTC(), "windows start when it is created")

	past := f.clock().Add(-time.Minute)
	soon := f.clock().Add(time.Hour)
	zero := 0
	for name, edit := range map[string]func(*responsibilities.Draft){
		"no name":              func(d *responsibilities.Draft) { d.Name = "  " },
		"a long name":          func(d *responsibilities.Draft) { d.Name = strings.Repeat("n", responsibilities.MaxName+1) },
		"a long charter":       func(d *responsibilities.Draft) { d.Charter = strings.Repeat("c", responsibilities.MaxCharter+1) },
		"a bad cron":           func(d *responsibilities.Draft) { d.Schedule = "every day" },
		"a time zone in cron":  func(d *responsibilities.Draft) { d.Schedule = "TZ=UTC 0 9 * * *" },
		"a short period":       func(d *responsibilities.Draft) { d.PeriodSecs = 59 },
		"a run limit too high": func(d *responsibilities.Draft) { d.RunLimit = responsibilities.MaxRunLimit + 1 },
		"a negative follow-up": func(d *responsibilities.Draft) { n := -1; d.FollowupLimit = &n },
		"no spend cap":         func(d *responsibilities.Draft) { d.SpendCapCents = 0 },
		"a short wake":         func(d *responsibilities.Draft) { d.MinWakeIntervalSecs = 30 },
		"stop_at in the past":  func(d *responsibilities.Draft) { d.StopAt = &past },
		"a schedule after stop_at": func(d *responsibilities.Draft) {
			d.Schedule, d.StopAt = "0 0 1 1 *", &soon
		},
		"an unknown event":   func(d *responsibilities.Draft) { d.Subscriptions = []string{"task_exploded"} },
		"an event twice":     func(d *responsibilities.Draft) { d.Subscriptions = []string{"task_done", "task_done"} },
		"an unknown agent":   func(d *responsibilities.Draft) { d.AgentID = f.gilID },
		"zero follow-ups ok": nil,
	} {
		if edit == nil {
			_, err := f.svc.Create(f.ctx, f.acme.ID, "", "operator:k", draft(f, func(d *responsibilities.Draft) { d.FollowupLimit = &zero }))
			require.NoError(t, err, name)
			continue
		}
		_, err := f.svc.Create(f.ctx, f.acme.ID, "", "operator:k", draft(f, edit))
		require.True(t, fault.Is(err, fault.Invalid), "%s: %v", name, err)
	}
}

func TestEveryOperatorChangeBumpsTheEpochAndCancelsTheLiveWakeup(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r, err := f.svc.Create(f.ctx, f.acme.ID, "", "operator:k", draft(f))
	require.NoError(t, err)
	f.open(t, r, responsibilities.BySchedule)
	w, err := f.svc.Followup(f.ctx, f.ada, r.ID, f.clock().Add(time.Hour))
	require.NoError(t, err)

	same := r.Charter
	up, err := f.svc.Update(f.ctx, f.acme.ID, r.ID, "", responsibilities.Change{Charter: &same})
	require.NoError(t, err)
	require.Equal(t, r.Epoch+1, up.Epoch, "even a change to the same value bumps the epoch")
	_, err = f.store.LiveWakeup(f.ctx, f.acme.ID, r.ID)
	require.True(t, fault.Is(err, fault.NotFound), "the pending follow-up %s was cancelled: %v", w.ID, err)

	paused := responsibilities.Paused
	up, err = f.svc.Update(f.ctx, f.acme.ID, r.ID, "", responsibilities.Change{Status: &paused})
	require.NoError(t, err)
	require.Equal(t, r.Epoch+2, up.Epoch)

	_, err = f.svc.Update(f.ctx, f.acme.ID, r.ID, "", responsibilities.Change{})
	require.True(t, fault.Is(err, fault.Invalid), "an empty change: %v", err)
	bad := "not cron"
	_, err = f.svc.Update(f.ctx, f.acme.ID, r.ID, "", responsibilities.Change{Schedule: &bad})
	require.True(t, fault.Is(err, fault.Invalid), "a bad schedule: %v", err)
	got, err := f.store.Responsibility(f.ctx, f.acme.ID, r.ID)
	require.NoError(t, err)
	require.Equal(t, up.Epoch, got.Epoch, "a refused change bumps nothing")

	stopped, active := responsibilities.Stopped, responsibilities.Active
	_, err = f.svc.Update(f.ctx, f.acme.ID, r.ID, "", responsibilities.Change{Status: &stopped})
	require.NoError(t, err)
	_, err = f.svc.Update(f.ctx, f.acme.ID, r.ID, "", responsibilities.Change{Status: &active})
	require.True(t, fault.Is(err, fault.Conflict), "a stopped responsibility stays stopped: %v", err)

	_, err = f.svc.Update(f.ctx, f.globex.ID, r.ID, "", responsibilities.Change{Charter: &same})
	require.True(t, fault.Is(err, fault.NotFound), "another tenant's: %v", err)
	require.True(t, fault.Is(f.svc.Delete(f.ctx, f.globex.ID, r.ID), fault.NotFound), "another tenant deletes nothing")
	require.NoError(t, f.svc.Delete(f.ctx, f.acme.ID, r.ID))
}

func TestNextScheduledReadsTheTenantsTimeZone(t *testing.T) {
	t.Parallel()
	r := responsibilities.Responsibility{Schedule: "0 9 * * *"}
	after := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	next, ok := r.NextScheduled("Asia/Tokyo", after)
	require.True(t, ok)
	require.Equal(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), next.UTC(), "09:00 in Tokyo is 00:00 UTC")
	stop := after.Add(time.Hour)
	r.StopAt = &stop
	_, ok = r.NextScheduled("Asia/Tokyo", after)
	require.False(t, ok, "nothing after stop_at")
}
