package ui

import (
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/grants"
)

// defaultLifetime is the lifetime, in hours, an approval form offers
// first: a grant that ends by itself unless the operator picks "until
// revoked" on purpose.
const defaultLifetime = 8

// maxBulk bounds the requests one bulk decision takes.
const maxBulk = 100

// Lifetimes are the approval forms' choices, in hours; 0 is "until
// revoked", offered last.
func (v *View) Lifetimes() []int { return []int{1, defaultLifetime, 24, 168, 0} }

// DefaultLifetime is the choice selected at first.
func (v *View) DefaultLifetime() int { return defaultLifetime }

// decideRequests approves or denies every selected pending request at
// once, with one lifetime. A request that cannot be decided (decided in
// the meantime, another tenant's) stops nothing: the others are decided
// and the answer says how many were not.
func (d *Dashboard) decideRequests(c echo.Context, v *View) error {
	form, err := c.FormParams()
	if err != nil {
		return fault.New(fault.Invalid, "the form could not be read")
	}
	refs := form["request"]
	decision := form.Get("decision")
	switch {
	case len(refs) == 0:
		return fault.New(fault.Invalid, "select at least one request")
	case len(refs) > maxBulk:
		return fault.New(fault.Invalid, "select at most %d requests at once", maxBulk)
	case decision != "approve" && decision != "deny":
		return fault.New(fault.Invalid, "decision must be approve or deny")
	}
	ttl, err := formLifetime(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	failed := 0
	for _, ref := range refs {
		id, err := uuid.Parse(ref)
		if err == nil && decision == "approve" {
			_, _, err = d.d.Grants.Approve(ctx, v.Tenant.ID, id, grants.Approval{By: v.Principal.ID(), TTL: ttl})
		} else if err == nil {
			_, err = d.d.Grants.Deny(ctx, v.Tenant.ID, id, v.Principal.ID(), "")
		}
		if err != nil {
			failed++
		}
	}
	if failed > 0 {
		return fault.New(fault.Conflict, "%d of the %d selected requests could not be decided: decided meanwhile, or not found", failed, len(refs))
	}
	if decision == "approve" {
		return back(c, v, returnTo(c), "requests_approved")
	}
	return back(c, v, returnTo(c), "requests_denied")
}
