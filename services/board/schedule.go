package board

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/visorhq/visor/services/fault"
)

// cronParser reads the standard five-field cron syntax (minute hour
// day-of-month month day-of-week) and the @hourly/@daily/@weekly/@monthly/
// @yearly and "@every <duration>" descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// MinEvery is the shortest "@every" interval a routine may use.
const MinEvery = time.Minute

// ParseSchedule checks a routine's schedule. A schedule names no time zone
// of its own: routines run in their tenant's time zone.
func ParseSchedule(spec string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || len(spec) > 200 || strings.Contains(spec, "TZ=") {
		return nil, fault.New(fault.Invalid, `schedule must be a five-field cron expression ("0 9 * * 1-5") or @hourly, @daily, @weekly, @monthly or "@every 30m", without a time zone (routines run in the tenant's time zone)`)
	}
	sched, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fault.New(fault.Invalid, "schedule %q is not a valid cron expression: %v", spec, err)
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok && every.Delay < MinEvery {
		return nil, fault.New(fault.Invalid, "a routine runs at most once a minute")
	}
	return sched, nil
}

// Location returns the time zone named by a tenant's time_zone setting,
// UTC when it is unset or unknown.
func Location(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// NextRun returns the first time after after that spec fires in the time
// zone tz.
func NextRun(spec, tz string, after time.Time) (time.Time, error) {
	sched, err := ParseSchedule(spec)
	if err != nil {
		return time.Time{}, err
	}
	next := sched.Next(after.In(Location(tz)))
	if next.IsZero() {
		return time.Time{}, fault.New(fault.Invalid, "schedule %q never fires", spec)
	}
	return next.UTC(), nil
}
