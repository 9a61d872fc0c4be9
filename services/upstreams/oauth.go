package upstreams

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// OAuthClient is Visor as an OAuth client of upstream servers, in its own
// name: the HTTP side (metadata discovery, token and revocation requests),
// every request through the outbound guard. Implemented in upstream.
type OAuthClient interface {
	// Discover reads the server's protected-resource metadata (RFC 9728)
	// and its authorization server's metadata (RFC 8414), returning a with
	// the endpoints and issuer filled in.
	Discover(ctx context.Context, serverURL string, a Auth) (Auth, error)
	// ClientCredentials asks for a token with the client credentials
	// grant, with a's resource indicator and scopes.
	ClientCredentials(ctx context.Context, a Auth, clientSecret string) (TokenSet, error)
	// Revoke revokes a token (RFC 7009); a server without a revocation
	// endpoint makes it a no-op.
	Revoke(ctx context.Context, a Auth, clientSecret, token string) error
	// Register registers Visor as a client by dynamic client registration
	// (RFC 7591) with one redirect URI, returning the client id and the
	// client secret (none for a public client).
	Register(ctx context.Context, a Auth, redirectURI string) (clientID, clientSecret string, err error)
	// Exchange trades an authorization code for tokens, with the PKCE
	// verifier and a's resource indicator.
	Exchange(ctx context.Context, a Auth, clientSecret, code, verifier, redirectURI string) (TokenSet, error)
	// Refresh asks for new tokens with a refresh token.
	Refresh(ctx context.Context, a Auth, clientSecret, refreshToken string) (TokenSet, error)
}

// TokenSet is a token endpoint's answer.
type TokenSet struct {
	AccessToken  string
	RefreshToken string
	// ExpiresAt is zero when the server gave no lifetime.
	ExpiresAt time.Time
	Scope     string
}

// tokenSkew renews a token this long before it expires.
const tokenSkew = 30 * time.Second

// SetOAuth sets the OAuth client (before Start).
func (s *Service) SetOAuth(c OAuthClient) { s.oauth = c }

// authorize sets what t authenticates with for srv's auth kind: nothing,
// or a bearer token Visor holds (client credentials), obtained and renewed
// as needed and kept sealed. The caller's own credential is never used.
func (s *Service) authorize(ctx context.Context, srv Server, t *Target) error {
	switch srv.Auth.Kind {
	case AuthNone, "":
		return nil
	case AuthClientCredentials:
		if s.oauth == nil {
			return fault.New(fault.Unavailable, "upstream server %s needs OAuth, which this deployment is not configured for", srv.Name)
		}
		t.Token = func(ctx context.Context) (string, error) { return s.clientToken(ctx, srv) }
		return nil
	case AuthOAuth:
		if s.oauth == nil {
			return fault.New(fault.Unavailable, "upstream server %s needs OAuth, which this deployment is not configured for", srv.Name)
		}
		if srv.Auth.PerMember && t.Member == uuid.Nil {
			return notConnected(srv, t.Member)
		}
		if _, err := s.cfg.Store.Token(ctx, srv.TenantID, srv.ID, t.Member); err != nil {
			if fault.Is(err, fault.NotFound) {
				return notConnected(srv, t.Member)
			}
			return err
		}
		member := t.Member
		t.Token = func(ctx context.Context) (string, error) { return s.memberToken(ctx, srv, member) }
		return nil
	}
	return fault.New(fault.Invalid, "upstream server %s has an unknown auth kind %q", srv.Name, srv.Auth.Kind)
}

// clientToken returns the tenant's token for srv, asking for a new one
// when there is none or it is about to expire.
func (s *Service) clientToken(ctx context.Context, srv Server) (string, error) {
	if tok, err := s.cfg.Store.Token(ctx, srv.TenantID, srv.ID, uuid.Nil); err == nil &&
		(tok.ExpiresAt == nil || time.Until(*tok.ExpiresAt) > tokenSkew) {
		if v, err := s.open(srv, tok.SealedAccess, "access_token"); err == nil {
			return v, nil
		}
	}
	a, secret, err := s.oauthClient(ctx, srv)
	if err != nil {
		return "", err
	}
	set, err := s.oauth.ClientCredentials(ctx, a, secret)
	if err != nil {
		return "", fault.Newf(fault.Unavailable, err, "upstream server %s: the token request failed: %s", srv.Name, fault.Message(asUnavailable(err)))
	}
	if err := s.saveToken(ctx, srv, uuid.Nil, set); err != nil {
		return "", err
	}
	return set.AccessToken, nil
}

// oauthClient returns srv's auth with discovered endpoints, and its
// client secret opened.
func (s *Service) oauthClient(ctx context.Context, srv Server) (Auth, string, error) {
	a := srv.Auth
	if a.TokenEndpoint == "" {
		var err error
		if a, err = s.oauth.Discover(ctx, srv.URL, a); err != nil {
			return a, "", fault.Newf(fault.Unavailable, err, "upstream server %s: its OAuth metadata cannot be read: %s", srv.Name, fault.Message(asUnavailable(err)))
		}
	}
	secs, err := s.cfg.Store.Secrets(ctx, srv.TenantID, srv.ID)
	if err != nil {
		return a, "", err
	}
	for _, sec := range secs {
		if sec.Kind == SecretClientSecret {
			v, err := s.open(srv, sec.Sealed, string(sec.Kind)+":"+sec.Name)
			return a, v, err
		}
	}
	return a, "", nil
}

// open opens a value sealed for srv under what.
func (s *Service) open(srv Server, sealed, what string) (string, error) {
	if s.cfg.Keys == nil {
		return "", fault.New(fault.Unavailable, "upstream server %s: no secret key is configured to open its secrets", srv.Name)
	}
	v, err := s.cfg.Keys.Open(sealed, sealContext(srv.TenantID, srv.ID, what))
	if err != nil {
		return "", fault.Newf(fault.Unavailable, err, "upstream server %s: a secret cannot be opened with the configured secret keys", srv.Name)
	}
	return string(v), nil
}

func (s *Service) saveToken(ctx context.Context, srv Server, member uuid.UUID, set TokenSet) error {
	if s.cfg.Keys == nil {
		return fault.New(fault.Unavailable, "no secret key is configured, so a token cannot be stored (docs/secrets.md)")
	}
	tok := Token{TenantID: srv.TenantID, ServerID: srv.ID, MemberID: member, Scope: set.Scope}
	var err error
	if tok.SealedAccess, err = s.cfg.Keys.Seal([]byte(set.AccessToken), sealContext(srv.TenantID, srv.ID, "access_token")); err != nil {
		return err
	}
	if set.RefreshToken != "" {
		if tok.SealedRefresh, err = s.cfg.Keys.Seal([]byte(set.RefreshToken), sealContext(srv.TenantID, srv.ID, "refresh_token")); err != nil {
			return err
		}
	}
	if !set.ExpiresAt.IsZero() {
		tok.ExpiresAt = &set.ExpiresAt
	}
	return s.cfg.Store.SaveToken(ctx, tok)
}

// revokeAll revokes the tokens Visor held for a removed server, best
// effort (the rows are gone already), with a and secret read before the
// server's secrets went with it.
func (s *Service) revokeAll(ctx context.Context, srv Server, a Auth, secret string, tokens []Token) {
	for _, tok := range tokens {
		for what, sealed := range map[string]string{"access_token": tok.SealedAccess, "refresh_token": tok.SealedRefresh} {
			if sealed == "" {
				continue
			}
			v, err := s.open(srv, sealed, what)
			if err == nil {
				err = s.oauth.Revoke(ctx, a, secret, v)
			}
			if err != nil {
				s.cfg.Log.WarnContext(ctx, "revoke upstream token", "server", srv.Name, "err", err)
			}
		}
	}
}
