package responsibilities

import (
	"fmt"
	"strings"
	"time"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

// What a question the injection scan flagged pushes.
const (
	// FlaggedNotice pushes only a notice that a question waits, never its
	// text or options.
	FlaggedNotice = "notice"
	// FlaggedSkip pushes nothing; the refusal is recorded with reason
	// "flagged".
	FlaggedSkip = "skip"
)

// Limits of the notify settings.
const (
	DefaultNoticesPerWindow = 10
	MaxNoticesPerWindow     = 1000
	maxNotifyURL            = 2000
)

// Notify is how a responsibility's questions are pushed to operators, set
// only by operators: on or off, the webhook URL (signed with Secret), what
// a flagged question pushes, quiet hours in the tenant's time zone
// ("HH:MM", both or neither; a start after the end spans midnight) and the
// pushes one window allows.
type Notify struct {
	Enabled      bool   `json:"enabled"`
	URL          string `json:"url,omitempty"`
	Flagged      string `json:"flagged"`
	QuietStart   string `json:"quiet_start,omitempty"`
	QuietEnd     string `json:"quiet_end,omitempty"`
	MaxPerWindow int    `json:"max_notifications_per_window"`
	// Secret is the webhook's signing key; it is shown once, when the URL
	// is set, and never read back.
	Secret []byte `json:"-"`
}

// DefaultNotify is a new responsibility's setting: nothing is pushed.
func DefaultNotify() Notify {
	return Notify{Flagged: FlaggedNotice, MaxPerWindow: DefaultNoticesPerWindow}
}

// NotifyChange is an operator's change of the notify settings; nil fields
// stay. ClearQuietHours removes the quiet hours. Setting a URL other than
// the current one (or the first) makes a new signing secret.
type NotifyChange struct {
	Enabled         *bool
	URL             *string
	Flagged         *string
	QuietStart      *string
	QuietEnd        *string
	ClearQuietHours bool
	MaxPerWindow    *int
}

// applyNotify returns n changed by ch, checked, with the shown form of a
// new signing secret when the URL changed ("" otherwise). Errors:
// fault.Invalid, with what is wrong.
func (s *Service) applyNotify(n Notify, ch *NotifyChange) (Notify, string, error) {
	if ch == nil {
		return n, "", nil
	}
	set(&n.Enabled, ch.Enabled)
	set(&n.Flagged, ch.Flagged)
	set(&n.QuietStart, ch.QuietStart)
	set(&n.QuietEnd, ch.QuietEnd)
	set(&n.MaxPerWindow, ch.MaxPerWindow)
	if ch.ClearQuietHours {
		n.QuietStart, n.QuietEnd = "", ""
	}
	shown := ""
	if ch.URL != nil {
		u := strings.TrimSpace(*ch.URL)
		if u != "" {
			var err error
			if u, err = s.checkNotifyURL(u); err != nil {
				return n, "", err
			}
		}
		if u != n.URL || n.Secret == nil {
			n.Secret, shown = rounds.NewSecret()
		}
		n.URL = u
		if u == "" {
			n.Secret, shown = nil, ""
		}
	}
	return n, shown, n.Check()
}

// checkNotifyURL runs the deployment's egress rules on a webhook URL.
func (s *Service) checkNotifyURL(raw string) (string, error) {
	if len(raw) > maxNotifyURL {
		return "", fault.New(fault.Invalid, "notify.url must be at most %d bytes", maxNotifyURL)
	}
	if s.notifier.CheckURL == nil {
		return "", fault.New(fault.Invalid, "this deployment does not push questions; leave notify.url empty")
	}
	u, err := s.notifier.CheckURL(raw)
	if err != nil {
		return "", fault.New(fault.Invalid, "notify.url: %s", fault.Message(err))
	}
	return u, nil
}

// Check validates the settings.
func (n Notify) Check() error {
	switch {
	case n.Enabled && n.URL == "":
		return fault.New(fault.Invalid, "notify.enabled needs notify.url: the webhook questions are pushed to")
	case n.Flagged != FlaggedNotice && n.Flagged != FlaggedSkip:
		return fault.New(fault.Invalid, "notify.flagged must be %q (a flagged question pushes only a notice) or %q (it pushes nothing)",
			FlaggedNotice, FlaggedSkip)
	case n.MaxPerWindow < 1 || n.MaxPerWindow > MaxNoticesPerWindow:
		return fault.New(fault.Invalid, "notify.max_notifications_per_window must be from 1 to %d", MaxNoticesPerWindow)
	case (n.QuietStart == "") != (n.QuietEnd == ""):
		return fault.New(fault.Invalid, "notify.quiet_start and notify.quiet_end are given together (or clear_quiet_hours)")
	}
	if n.QuietStart == "" {
		return nil
	}
	start, err := ClockMinutes(n.QuietStart)
	if err != nil {
		return fault.New(fault.Invalid, "notify.quiet_start: %s", err)
	}
	end, err := ClockMinutes(n.QuietEnd)
	if err != nil {
		return fault.New(fault.Invalid, "notify.quiet_end: %s", err)
	}
	if start == end {
		return fault.New(fault.Invalid, "notify.quiet_start and notify.quiet_end must differ")
	}
	return nil
}

// ClockMinutes reads "HH:MM" (24-hour) as minutes after midnight.
func ClockMinutes(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, fmt.Errorf("%q is not a 24-hour time like 22:00", s)
	}
	return t.Hour()*60 + t.Minute(), nil
}

// Clock writes minutes after midnight as "HH:MM".
func Clock(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// Quiet reports whether t falls in the quiet hours, read in the time zone
// tz ("" is UTC), and when they end.
func (n Notify) Quiet(tz string, t time.Time) (bool, time.Time) {
	if n.QuietStart == "" {
		return false, time.Time{}
	}
	start, err1 := ClockMinutes(n.QuietStart)
	end, err2 := ClockMinutes(n.QuietEnd)
	loc, err3 := time.LoadLocation(tz)
	if err1 != nil || err2 != nil || err3 != nil {
		return false, time.Time{}
	}
	local := t.In(loc)
	m := local.Hour()*60 + local.Minute()
	in := start <= m && m < end
	if start > end {
		in = m >= start || m < end
	}
	if !in {
		return false, time.Time{}
	}
	until := time.Date(local.Year(), local.Month(), local.Day(), end/60, end%60, 0, 0, loc)
	if !until.After(t) {
		until = time.Date(local.Year(), local.Month(), local.Day()+1, end/60, end%60, 0, 0, loc)
	}
	return true, until
}
