package ui

import (
	"context"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/grants"
)

// badgeCap bounds what a menu badge counts; beyond, it shows the cap.
const badgeCap = 99

// loadBadges counts what waits for a person, per menu entry: pending
// capability requests and open questions. A count that cannot be read is
// left out: the menu must not fail a page.
func (d *Dashboard) loadBadges(ctx context.Context, tenantID uuid.UUID) map[string]int {
	out := map[string]int{}
	if d.d.Grants != nil {
		if rs, err := d.d.Grants.ListRequests(ctx, tenantID, grants.Pending, nil, badgeCap); err == nil {
			out["requests"] = len(rs)
		}
	}
	if d.d.Responsibilities != nil {
		if qs, err := d.d.Responsibilities.Questions(ctx, tenantID, uuid.Nil, nil, badgeCap); err == nil {
			out["questions"] = len(qs)
		}
	}
	return out
}

// Badge is the count shown beside the menu entry sub, 0 for none.
func (v *View) Badge(sub string) int {
	if v.badges == nil {
		v.badges = map[string]int{}
		if v.loadBadges != nil {
			v.badges = v.loadBadges()
		}
	}
	return v.badges[sub]
}
