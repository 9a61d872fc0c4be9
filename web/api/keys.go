package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
)

type keys struct{ a *API }

// NewKey is the body of POST /tenants/{tenant}/keys. An operator key acts
// as no agent; an agent key needs agent (its id or name).
type NewKey struct {
	Kind      identity.KeyKind `json:"kind"`
	Agent     *AgentRef        `json:"agent,omitempty"`
	Name      string           `json:"name"`
	Scopes    []string         `json:"scopes,omitempty"`
	ExpiresAt *time.Time       `json:"expires_at,omitempty"`
}

// KeyList is the body of GET /tenants/{tenant}/keys.
type KeyList struct {
	Keys       []Key  `json:"keys"`
	NextCursor string `json:"next_cursor,omitempty"`
}

func (r keys) Operations() []Operation {
	p := "/tenants/:tenant/keys"
	return []Operation{
		{Method: http.MethodGet, Path: p, ID: "listKeys", Tag: "keys", Needs: identity.ReadTenant,
			Summary: "List the tenant's API keys (never their secrets), oldest first", Query: Paged(), Response: KeyList{}, Handler: r.list},
		{Method: http.MethodPost, Path: p, ID: "createKey", Errors: []int{http.StatusConflict}, Tag: "keys", Needs: identity.ManageKeys,
			Summary: "Create an operator or agent key with scopes you hold (default: all you hold; agent keys: every tool scope you hold); the token is in this response only", Request: NewKey{}, Response: CreatedKey{}, Status: http.StatusCreated, Handler: r.create},
		{Method: http.MethodGet, Path: p + "/:key", ID: "getKey", Tag: "keys", Needs: identity.ReadTenant,
			Summary: "Get a key", Response: Key{}, Handler: r.get},
		{Method: http.MethodDelete, Path: p + "/:key", ID: "revokeKey", Tag: "keys", Needs: identity.ManageKeys,
			Summary: "Revoke a key; this replica refuses it at once, the others when the change event arrives (2 s at worst)", Response: Key{}, Handler: r.revoke},
	}
}

func (r keys) list(c echo.Context) error {
	ks, err := r.a.ids.ListKeys(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, ks, func(k identity.Key) string { return oldestFirst(k.CreatedAt, k.ID) })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, KeyList{Keys: mapSlice(page, keyOut), NextCursor: next})
}

func (r keys) create(c echo.Context) error {
	var in NewKey
	if err := decode(c, &in); err != nil {
		return err
	}
	nk := identity.NewKey{Kind: in.Kind, Name: in.Name, Scopes: in.Scopes, ExpiresAt: in.ExpiresAt}
	if in.Agent != nil {
		id, err := bodyAgent(c, "agent", *in.Agent)
		if err != nil {
			return err
		}
		nk.AgentID = id
	}
	k, token, err := r.a.ids.IssueKey(c.Request().Context(), principal(c), tenant(c).ID, nk)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, CreatedKey{Key: keyOut(k), Token: token})
}

func (r keys) get(c echo.Context) error {
	id, err := pathID(c, "key")
	if err != nil {
		return err
	}
	k, err := r.a.ids.Key(c.Request().Context(), tenant(c).ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, keyOut(k))
}

func (r keys) revoke(c echo.Context) error {
	id, err := pathID(c, "key")
	if err != nil {
		return err
	}
	k, err := r.a.ids.RevokeKey(c.Request().Context(), tenant(c).ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, keyOut(k))
}
