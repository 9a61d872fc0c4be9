package oauth

import (
	"context"
	"slices"

	"github.com/ory/fosite"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// ResolveToken implements auth.TokenResolver for OAuth access tokens: the
// token must be an active access token of tenant t whose audience is t's
// MCP endpoint. A refresh token presented as a bearer is refused.
func (s *Server) ResolveToken(ctx context.Context, t identity.Tenant, token string) (identity.Principal, error) {
	ctx = auth.WithTenant(ctx, t)
	use, ar, err := s.provider.IntrospectToken(ctx, token, fosite.AccessToken, &Session{})
	if err != nil || use != fosite.AccessToken {
		return identity.Principal{}, fault.New(fault.Unauthorized, "the access token is not valid")
	}
	if !slices.Contains(ar.GetGrantedAudience(), s.urls.Resource(t.Slug)) {
		return identity.Principal{}, fault.New(fault.Unauthorized, "the access token was not issued for this resource")
	}
	sess, _ := ar.GetSession().(*Session)
	if sess == nil {
		return identity.Principal{}, fault.New(fault.Unauthorized, "the access token is not valid")
	}
	// The member's current role bounds the token: a member demoted to
	// viewer takes their clients' write scopes with them.
	m, err := s.identity.Member(ctx, t.ID, sess.MemberID)
	if fault.Is(err, fault.NotFound) {
		return identity.Principal{}, fault.New(fault.Unauthorized, "the access token's member is gone")
	}
	if err != nil {
		return identity.Principal{}, err
	}
	scopes, _ := roleScopes(m.Role, ar.GetGrantedScopes())
	return identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindExternal, MemberID: sess.MemberID,
		ClientID: ar.GetClient().GetID(), CredentialID: identity.Credential{Kind: identity.CredentialOAuth, ID: ar.GetID()}.String(), Scopes: scopes}, nil
}
