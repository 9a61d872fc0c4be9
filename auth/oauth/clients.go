package oauth

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// clientLoader finds a tenant's clients: registered ones in the store,
// metadata-document ones fetched through the SSRF-guarded fetcher and
// cached in the store for ttl.
type clientLoader struct {
	store   credentials.Store
	urls    auth.URLs
	fetcher *Fetcher
	// fetches counts document fetches per tenant and source address;
	// fetchCeiling counts them per tenant, from every address together.
	fetches      *Limiter
	fetchCeiling *Limiter
	ttl          time.Duration
	now          func() time.Time
}

// load returns the tenant's client id. Unknown ids are fosite.ErrNotFound
// (fosite reports invalid_client).
func (l *clientLoader) load(ctx context.Context, t identity.Tenant, id string) (credentials.Client, error) {
	if IsMetadataURL(id) {
		return l.loadMetadata(ctx, t, id)
	}
	c, err := l.store.Client(ctx, t.ID, id)
	if fault.Is(err, fault.NotFound) {
		return c, fosite.ErrNotFound.WithHint("Unknown client_id.")
	}
	return c, err
}

func (l *clientLoader) loadMetadata(ctx context.Context, t identity.Tenant, id string) (credentials.Client, error) {
	c, err := l.store.Client(ctx, t.ID, id)
	if err == nil && c.FetchedAt != nil && l.now().Sub(*c.FetchedAt) < l.ttl {
		return c, nil
	}
	if err != nil && !fault.Is(err, fault.NotFound) {
		return c, err
	}
	if !l.fetches.Allow(ctx, t.ID.String()+"|"+sourceFrom(ctx)) {
		return c, fosite.ErrInvalidClient.WithHint("Too many client metadata documents fetched from your address; try again in a minute.")
	}
	if !l.fetchCeiling.Allow(ctx, t.ID.String()) {
		return c, fosite.ErrInvalidClient.WithHint("Too many client metadata documents fetched for this tenant; try again in a minute.")
	}
	doc, err := l.fetcher.Fetch(ctx, id)
	if fault.Is(err, fault.Unavailable) && c.FetchedAt != nil && l.now().Sub(*c.FetchedAt) < staleLimit {
		return c, nil // the host is unreachable: keep using what it last said, for a while
	}
	if err != nil {
		return c, fosite.ErrInvalidClient.WithHintf("The client metadata document could not be used: %s", fault.Message(err)).WithWrap(err)
	}
	now := l.now()
	doc.TenantID, doc.FetchedAt = t.ID, &now
	if err := l.store.PutMetadataClient(ctx, &doc); err != nil {
		return doc, err
	}
	return doc, nil
}

// staleLimit is how long a cached metadata document keeps serving while its
// host cannot be reached. A document that is fetched but invalid, or gone
// (404), is never replaced by the cached copy.
const staleLimit = 24 * time.Hour

// matchedRedirect is a redirect URI that MatchRedirect accepted for a
// client in this request.
type matchedRedirect struct{ clientID, uri string }

type matchedRedirectKey struct{}

// WithMatchedRedirect tells the client loader, for the rest of an
// authorization request, that uri passed MatchRedirect for clientID: fosite
// lets a loopback IP's port vary but not localhost's, and this makes it
// agree.
func WithMatchedRedirect(ctx context.Context, clientID, uri string) context.Context {
	return context.WithValue(ctx, matchedRedirectKey{}, matchedRedirect{clientID: clientID, uri: uri})
}

// fositeClient presents c to fosite. Every client of a tenant may only
// obtain tokens for that tenant's MCP endpoint. A redirect URI that
// MatchRedirect accepted in this request (a loopback URI on another port)
// is presented as registered, so fosite's stricter comparison agrees.
func (l *clientLoader) fositeClient(ctx context.Context, t identity.Tenant, c credentials.Client) fosite.Client {
	if m, ok := ctx.Value(matchedRedirectKey{}).(matchedRedirect); ok && m.clientID == c.ID && m.uri != "" &&
		!slices.Contains(c.RedirectURIs, m.uri) && MatchRedirect(c.RedirectURIs, m.uri) {
		c.RedirectURIs = append(slices.Clone(c.RedirectURIs), m.uri)
	}
	grants := c.GrantTypes
	if !slices.Contains(grants, "authorization_code") {
		grants = append(slices.Clone(grants), "authorization_code")
	}
	return &fosite.DefaultOpenIDConnectClient{
		DefaultClient: &fosite.DefaultClient{
			ID: c.ID, Secret: []byte(c.SecretHash), RedirectURIs: c.RedirectURIs, GrantTypes: grants,
			ResponseTypes: []string{"code"}, Scopes: c.Scopes, Audience: []string{l.urls.Resource(t.Slug)},
			Public: c.Public(),
		},
		TokenEndpointAuthMethod: c.AuthMethod,
	}
}

// Client returns the tenant's client id: a registered client, or a Client
// ID Metadata Document (fetched, or cached for a while). An unknown or
// unusable client is a *fosite.RFC6749Error whose hint says why.
func (s *Server) Client(ctx context.Context, t identity.Tenant, id string) (credentials.Client, error) {
	return s.clients.load(ctx, t, id)
}

// RevokeConsent withdraws a member's consent for a client, revoking the
// client's tokens for the member, and announces it so no replica keeps
// answering from a cached token.
func (s *Server) RevokeConsent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string) error {
	if err := s.store.RevokeConsent(ctx, tenantID, memberID, clientID); err != nil {
		return err
	}
	s.identity.Announce(ctx, changes.Event{TenantID: tenantID, Kind: changes.ClientChanged})
	return nil
}

// DeleteClient deletes a client with its tokens and consents, and
// announces it.
func (s *Server) DeleteClient(ctx context.Context, tenantID uuid.UUID, clientID string) error {
	if err := s.store.DeleteClient(ctx, tenantID, clientID); err != nil {
		return err
	}
	s.identity.Announce(ctx, changes.Event{TenantID: tenantID, Kind: changes.ClientChanged})
	return nil
}

// AddConsent records that a member of the tenant allowed the client the
// scopes, in addition to those allowed before.
func (s *Server) AddConsent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string, scopes []string) error {
	return s.store.AddConsent(ctx, tenantID, memberID, clientID, scopes)
}

// Consent returns the scopes a member of the tenant allowed the client;
// fault.NotFound when the member never answered it.
func (s *Server) Consent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string) ([]string, error) {
	return s.store.Consent(ctx, tenantID, memberID, clientID)
}
