package ui

import (
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// saveMemberZone stores the time zone the signed-in member reads times
// in; empty goes back to the tenant's. Any member may choose their own.
func (d *Dashboard) saveMemberZone(c echo.Context, v *View) error {
	v.Object = "member:" + v.Member.ID.String()
	tz := strings.TrimSpace(c.FormValue("time_zone"))
	if tz != "" {
		if err := identity.CheckTimeZone(tz); err != nil {
			return err
		}
	}
	if d.f.prefs == nil {
		return fault.New(fault.Unavailable, "this server keeps no member preferences")
	}
	if err := d.f.prefs.SetMemberTimeZone(c.Request().Context(), v.Tenant.ID, v.Member.ID, tz); err != nil {
		return err
	}
	return back(c, v, "tenant", "zone_saved")
}

// ZoneName names the zone the page's times are written in ("Asia/Tokyo").
func (v *View) ZoneName() string { return v.Zone().String() }

// zoneInputs are the layouts a time typed in the audit filters may take,
// read in the member's zone; RFC 3339 (with its offset) is read as is.
var zoneInputs = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// parseLocalTime reads s in loc when it has one of zoneInputs' layouts.
func parseLocalTime(s string, loc *time.Location) (time.Time, bool) {
	for _, layout := range zoneInputs {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
