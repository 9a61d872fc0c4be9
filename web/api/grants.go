package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
)

// Grants is the admin API of scoped grants: operators list AI employees'
// capability requests, approve (optionally time-limited) or deny them, and
// grant or revoke directly. Add it with API.Add.
type Grants struct{ svc *grants.Service }

// NewGrants returns the grants resource.
func NewGrants(svc *grants.Service) Grants { return Grants{svc: svc} }

// RequestList is the body of GET /tenants/{tenant}/grants/requests: one
// page, and the cursor of the next when there may be more.
type RequestList struct {
	Requests   []grants.Request `json:"requests"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

// GrantList is the body of GET /tenants/{tenant}/grants.
type GrantList struct {
	Grants     []grants.Grant `json:"grants"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// ApproveRequest is the optional body of POST .../requests/{id}/approve.
type ApproveRequest struct {
	// TTLSeconds, when positive, makes the grant expire.
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
	// Tool widens the grant to an allowed_tools-style entry.
	Tool string `json:"tool,omitempty"`
	Note string `json:"note,omitempty"`
}

// Approved is the answer to an approval.
type Approved struct {
	Request grants.Request `json:"request"`
	Grant   grants.Grant   `json:"grant"`
}

// DenyRequest is the optional body of POST .../requests/{id}/deny.
type DenyRequest struct {
	Note string `json:"note,omitempty"`
}

// NewGrant is the body of POST /tenants/{tenant}/grants.
type NewGrant struct {
	// Agent is the AI employee: its id or name.
	Agent      AgentRef  `json:"agent"`
	Tool       string    `json:"tool"`
	TTLSeconds int64     `json:"ttl_seconds,omitempty"`
	TaskID     uuid.UUID `json:"task_id,omitzero"`
}

// Operations lists the grant routes.
func (r Grants) Operations() []Operation {
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/grants/requests", ID: "listCapabilityRequests", Tag: "grants", Needs: identity.ReadTenant,
			Summary: "List AI employees' capability requests, newest first", Response: RequestList{}, Handler: r.listRequests,
			Query: Paged(QueryParam{Name: "status", Type: "string", Enum: []string{string(grants.Pending), string(grants.Approved), string(grants.Denied)},
				Description: "Only requests in this state."})},
		{Method: http.MethodPost, Path: "/tenants/:tenant/grants/requests/:request/approve", ID: "approveCapabilityRequest", Errors: []int{http.StatusConflict}, Tag: "grants", Needs: identity.ManageGrants,
			Summary: "Approve a pending request: creates a grant (optionally expiring) and the tool appears with list_changed", Request: ApproveRequest{}, OptionalBody: true, Response: Approved{}, Handler: r.approve},
		{Method: http.MethodPost, Path: "/tenants/:tenant/grants/requests/:request/deny", ID: "denyCapabilityRequest", Errors: []int{http.StatusConflict}, Tag: "grants", Needs: identity.ManageGrants,
			Summary: "Deny a pending request", Request: DenyRequest{}, OptionalBody: true, Response: grants.Request{}, Handler: r.deny},
		{Method: http.MethodGet, Path: "/tenants/:tenant/grants", ID: "listGrants", Tag: "grants", Needs: identity.ReadTenant,
			Summary: "List grants, newest first", Response: GrantList{}, Handler: r.listGrants,
			Query: Paged(QueryParam{Name: "agent", Type: "string", Description: "Only this AI employee's grants: its id or name."},
				QueryParam{Name: "live", Type: "boolean", Default: false, Description: "Only grants in force now."})},
		{Method: http.MethodPost, Path: "/tenants/:tenant/grants", ID: "createGrant", Tag: "grants", Needs: identity.ManageGrants,
			Summary: "Grant a scoped tool directly (optionally expiring, or ending with a task)", Request: NewGrant{}, Response: grants.Grant{}, Status: http.StatusCreated, Handler: r.create},
		{Method: http.MethodDelete, Path: "/tenants/:tenant/grants/:grant", ID: "revokeGrant", Errors: []int{http.StatusConflict}, Tag: "grants", Needs: identity.ManageGrants,
			Summary: "Revoke a live grant: the tool disappears with list_changed", Response: grants.Grant{}, Handler: r.revoke},
	}
}

func (r Grants) listRequests(c echo.Context) error {
	status := grants.Status(c.QueryParam("status"))
	if status != "" && !status.Valid() {
		return fault.New(fault.Invalid, "status must be pending, approved or denied")
	}
	page, err := ReadPage(c)
	if err != nil {
		return err
	}
	from, err := page.After()
	if err != nil {
		return err
	}
	rs, err := r.svc.ListRequests(c.Request().Context(), tenant(c).ID, status, from, page.Limit+1)
	if err != nil {
		return err
	}
	out := RequestList{}
	out.Requests, out.NextCursor = cut(rs, page.Limit, grants.PositionOf)
	return c.JSON(http.StatusOK, out)
}

func (r Grants) approve(c echo.Context) error {
	id, err := pathID(c, "request")
	if err != nil {
		return err
	}
	var in ApproveRequest
	if err := decodeOptional(c, &in); err != nil {
		return err
	}
	req, g, err := r.svc.Approve(c.Request().Context(), tenant(c).ID, id, grants.Approval{
		By: decider(c), TTL: seconds(in.TTLSeconds), Tool: in.Tool, Note: in.Note})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, Approved{Request: req, Grant: g})
}

func (r Grants) deny(c echo.Context) error {
	id, err := pathID(c, "request")
	if err != nil {
		return err
	}
	var in DenyRequest
	if err := decodeOptional(c, &in); err != nil {
		return err
	}
	req, err := r.svc.Deny(c.Request().Context(), tenant(c).ID, id, decider(c), in.Note)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, req)
}

func (r Grants) listGrants(c echo.Context) error {
	var agent uuid.UUID
	if s := c.QueryParam("agent"); s != "" {
		var err error
		if agent, err = bodyAgent(c, "agent", AgentRef(s)); err != nil {
			return err
		}
	}
	live := false
	switch c.QueryParam("live") {
	case "", "false":
	case "true":
		live = true
	default:
		return fault.New(fault.Invalid, "live must be true or false")
	}
	gs, err := r.svc.ListGrants(c.Request().Context(), tenant(c).ID, agent, live)
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, gs, func(g grants.Grant) string { return newestFirst(g.CreatedAt, g.ID) })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, GrantList{Grants: nonNil(page), NextCursor: next})
}

func (r Grants) create(c echo.Context) error {
	var in NewGrant
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Agent == "" {
		return fault.New(fault.Invalid, "agent is required (the AI employee's id or name)")
	}
	agent, err := bodyAgent(c, "agent", in.Agent)
	if err != nil {
		return err
	}
	g, err := r.svc.Grant(c.Request().Context(), tenant(c).ID, agent, in.Tool, in.TaskID, seconds(in.TTLSeconds), decider(c))
	if fault.Is(err, fault.NotFound) {
		return fault.New(fault.Invalid, "agent names no agent of this tenant")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, g)
}

func (r Grants) revoke(c echo.Context) error {
	id, err := pathID(c, "grant")
	if err != nil {
		return err
	}
	g, err := r.svc.Revoke(c.Request().Context(), tenant(c).ID, id, decider(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, g)
}

// decodeOptional decodes a body that may be absent.
func decodeOptional(c echo.Context, v any) error {
	if c.Request().ContentLength == 0 {
		return nil
	}
	return decode(c, v)
}

// decider names who decided, for the grant's record.
func decider(c echo.Context) string { return principal(c).ID() }

// seconds turns a wire TTL into a duration; a negative one stays negative so
// the service refuses it.
func seconds(n int64) time.Duration {
	if n > int64(grants.MaxTTL/time.Second) {
		return grants.MaxTTL + time.Second
	}
	return time.Duration(n) * time.Second
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
