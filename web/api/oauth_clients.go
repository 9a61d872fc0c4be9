package api

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/validtext"
)

// OAuthClients is the admin API of a tenant's OAuth clients: list them
// (pre-registered, dynamically registered and cached metadata documents),
// pre-register one, and delete one, which revokes its tokens and consents.
type OAuthClients struct {
	server *oauth.Server
	store  credentials.Store
}

// NewOAuthClients returns the OAuth clients resource.
func NewOAuthClients(server *oauth.Server, store credentials.Store) OAuthClients {
	return OAuthClients{server: server, store: store}
}

// OAuthClient is a client as the admin API shows it; its secret appears
// only in the answer to its creation.
type OAuthClient struct {
	ClientID                string     `json:"client_id"`
	Kind                    string     `json:"kind"`
	ClientName              string     `json:"client_name"`
	ClientURI               string     `json:"client_uri,omitempty"`
	RedirectURIs            []string   `json:"redirect_uris"`
	GrantTypes              []string   `json:"grant_types"`
	Scope                   string     `json:"scope"`
	TokenEndpointAuthMethod string     `json:"token_endpoint_auth_method"`
	ClientSecret            string     `json:"client_secret,omitempty"`
	CreatedAt               time.Time  `json:"created_at"`
	FetchedAt               *time.Time `json:"fetched_at,omitempty"`
}

// OAuthClientList is the body of GET /tenants/{tenant}/oauth/clients.
type OAuthClientList struct {
	Clients    []OAuthClient `json:"clients"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// NewOAuthClient is the body of POST /tenants/{tenant}/oauth/clients.
type NewOAuthClient struct {
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// Operations lists the OAuth client routes.
func (r OAuthClients) Operations() []Operation {
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/oauth/clients", ID: "listOAuthClients", Tag: "oauth", Needs: identity.ReadTenant,
			Summary: "List the tenant's OAuth clients, by client_id", Query: Paged(), Response: OAuthClientList{}, Handler: r.list},
		{Method: http.MethodPost, Path: "/tenants/:tenant/oauth/clients", ID: "createOAuthClient", Tag: "oauth", Needs: identity.ManageClients,
			Summary: "Pre-register an OAuth client; a confidential client's secret is shown once", Request: NewOAuthClient{},
			Response: OAuthClient{}, Status: http.StatusCreated, Handler: r.create},
		{Method: http.MethodDelete, Path: "/tenants/:tenant/oauth/clients/:client", ID: "deleteOAuthClient", Tag: "oauth", Needs: identity.ManageClients,
			Summary: "Delete an OAuth client, revoking its tokens and consents", Handler: r.remove, Status: http.StatusNoContent},
		{Method: http.MethodGet, Path: "/tenants/:tenant/oauth/consents", ID: "listOAuthConsents", Tag: "oauth", Needs: identity.ManageOwnConsents,
			Summary:  "List a member's OAuth consents, by client_id: the caller's own, or another's with member_id (needs manage_members)",
			Query:    Paged(QueryParam{Name: "member_id", Type: "string", Format: "uuid", Description: "The member whose consents these are; default: the signed-in member. Needed with an API key; another member's consents need the manage_members action."}),
			Response: ConsentList{}, Handler: r.listConsents},
		{Method: http.MethodDelete, Path: "/tenants/:tenant/oauth/consents/:client", ID: "revokeOAuthConsent", Tag: "oauth", Needs: identity.ManageOwnConsents,
			Summary: "Withdraw a member's consent for a client and revoke that client's tokens for the member",
			Query:   []QueryParam{{Name: "member_id", Type: "string", Format: "uuid", Description: "The member whose consents these are; default: the signed-in member. Needed with an API key; another member's consents need the manage_members action."}},
			Handler: r.revokeConsent, Status: http.StatusNoContent},
	}
}

// Consent is what a member approved for one client.
type Consent struct {
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes"`
}

// ConsentList is the body of GET /tenants/{tenant}/oauth/consents.
type ConsentList struct {
	MemberID   uuid.UUID `json:"member_id"`
	Consents   []Consent `json:"consents"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// consentMember is whose consents a request addresses: the member_id it
// names, or the caller's own when it names none (a member session).
// Another member's consents need ManageMembers.
func consentMember(c echo.Context) (uuid.UUID, error) {
	p := principal(c)
	own := uuid.Nil
	if p.Kind == identity.KindOperator {
		own = p.MemberID
	}
	q := c.QueryParam("member_id")
	if q == "" && own != uuid.Nil {
		return own, nil
	}
	id, err := uuid.Parse(q)
	if err != nil {
		return uuid.Nil, fault.New(fault.Invalid, "member_id must name a member")
	}
	if id != own {
		if err := p.Check(identity.ManageMembers); err != nil {
			return uuid.Nil, err
		}
	}
	return id, nil
}

func (r OAuthClients) listConsents(c echo.Context) error {
	mid, err := consentMember(c)
	if err != nil {
		return err
	}
	all, err := r.store.ListConsents(c.Request().Context(), tenant(c).ID, mid)
	if err != nil {
		return err
	}
	consents := make([]Consent, 0, len(all))
	for id, scopes := range all {
		consents = append(consents, Consent{ClientID: id, Scopes: scopes})
	}
	page, next, err := pageBy(c, consents, func(v Consent) string { return v.ClientID })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ConsentList{MemberID: mid, Consents: page, NextCursor: next})
}

func (r OAuthClients) revokeConsent(c echo.Context) error {
	mid, err := consentMember(c)
	if err != nil {
		return err
	}
	id, err := clientParam(c)
	if err != nil {
		return err
	}
	if err := r.server.RevokeConsent(c.Request().Context(), tenant(c).ID, mid, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func clientView(c credentials.Client, secret string) OAuthClient {
	return OAuthClient{ClientID: c.ID, Kind: string(c.Kind), ClientName: c.Name, ClientURI: c.ClientURI, RedirectURIs: c.RedirectURIs,
		GrantTypes: c.GrantTypes, Scope: strings.Join(c.Scopes, " "), TokenEndpointAuthMethod: c.AuthMethod, ClientSecret: secret,
		CreatedAt: c.CreatedAt, FetchedAt: c.FetchedAt}
}

func (r OAuthClients) list(c echo.Context) error {
	cs, err := r.store.ListClients(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, cs, func(v credentials.Client) string { return v.ID })
	if err != nil {
		return err
	}
	out := OAuthClientList{Clients: make([]OAuthClient, 0, len(page)), NextCursor: next}
	for _, cl := range page {
		out.Clients = append(out.Clients, clientView(cl, ""))
	}
	return c.JSON(http.StatusOK, out)
}

func (r OAuthClients) create(c echo.Context) error {
	var in NewOAuthClient
	if err := decode(c, &in); err != nil {
		return err
	}
	cl, secret, err := r.server.CreateClient(c.Request().Context(), tenant(c).ID, credentials.ClientPreregistered, oauth.ClientMetadata{
		ClientName: in.ClientName, ClientURI: in.ClientURI, RedirectURIs: in.RedirectURIs, GrantTypes: in.GrantTypes,
		TokenEndpointAuthMethod: in.TokenEndpointAuthMethod, Scope: in.Scope})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, clientView(cl, secret))
}

func (r OAuthClients) remove(c echo.Context) error {
	id, err := clientParam(c)
	if err != nil {
		return err
	}
	if err := r.server.DeleteClient(c.Request().Context(), tenant(c).ID, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// clientParam is the client id of the path. A metadata-document client id
// is an escaped URL, so it is unescaped once more than the router does, and
// checked again: "%2500" passed the edge as text and is a NUL only now.
func clientParam(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("client"))
	if err != nil {
		return "", fault.New(fault.Invalid, "the client id in the path is not a valid escaped URL")
	}
	if err := validtext.String(id); err != nil {
		return "", fault.New(fault.Invalid, "the client id in the path %s", err)
	}
	return id, nil
}
