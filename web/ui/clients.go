package ui

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// OAuthAdmin changes a tenant's OAuth clients and consents (the
// authorization server): deleting a client revokes its tokens and
// consents; revoking a consent revokes the member's tokens for the client.
type OAuthAdmin interface {
	DeleteClient(ctx context.Context, tenantID uuid.UUID, clientID string) error
	RevokeConsent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string) error
}

func (d *Dashboard) clientRoutes(g *echo.Group) {
	g.GET("/clients", d.page(identity.ReadTenant, d.clients))
	g.POST("/clients/delete", d.confirmFirst(identity.ManageClients, "confirm.delete_client", "clients.delete", d.action("deleteOAuthClient", identity.ManageClients, d.deleteClient)))
	g.POST("/consents/revoke", d.confirmFirst(identity.ManageOwnConsents, "confirm.revoke_consent", "consents.revoke", d.action("revokeOAuthConsent", identity.ManageOwnConsents, d.revokeConsent)))
}

type clientsData struct {
	Clients  []credentials.Client
	Consents []consentRow
}

type consentRow struct {
	ClientID string
	Name     string
	Scopes   string
}

func (d *Dashboard) clients(c echo.Context, v *View) error {
	if d.d.Clients == nil {
		return fault.New(fault.Unavailable, "OAuth clients are not served here")
	}
	ctx := c.Request().Context()
	cs, err := d.d.Clients.ListClients(ctx, v.Tenant.ID)
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, cl := range cs {
		names[cl.ID] = cl.Name
	}
	data := clientsData{Clients: cs}
	consents, err := d.d.Clients.ListConsents(ctx, v.Tenant.ID, v.Member.ID)
	if err != nil {
		return err
	}
	for id, scopes := range consents {
		data.Consents = append(data.Consents, consentRow{ClientID: id, Name: names[id], Scopes: strings.Join(scopes, " ")})
	}
	slices.SortFunc(data.Consents, func(a, b consentRow) int { return strings.Compare(a.ClientID, b.ClientID) })
	v.Title, v.Nav, v.Data = "clients.title", "clients", data
	return d.f.Render(c, http.StatusOK, "clients", v)
}

// clientField reads the posted client id, bounded like any client id.
func clientField(c echo.Context) (string, error) {
	id := c.FormValue("client_id")
	if id == "" || len(id) > 2048 {
		return "", fault.New(fault.NotFound, "no such OAuth client")
	}
	return id, nil
}

func (d *Dashboard) deleteClient(c echo.Context, v *View) error {
	id, err := clientField(c)
	if err != nil {
		return err
	}
	v.Object = "oauth_client:" + id
	if err := d.d.OAuth.DeleteClient(c.Request().Context(), v.Tenant.ID, id); err != nil {
		return err
	}
	return back(c, v, "clients", "client_deleted")
}

// revokeConsent revokes the signed-in member's own consent to a client.
func (d *Dashboard) revokeConsent(c echo.Context, v *View) error {
	id, err := clientField(c)
	if err != nil {
		return err
	}
	v.Object = "oauth_consent:" + id
	if err := d.d.OAuth.RevokeConsent(c.Request().Context(), v.Tenant.ID, v.Member.ID, id); err != nil {
		return err
	}
	return back(c, v, "clients", "consent_revoked")
}
