package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/pkce"
	fstorage "github.com/ory/fosite/storage"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// fositeStore adapts credentials.Store to fosite's storage interfaces. The
// tenant comes from the request context (auth.TenantFrom), set by the
// route middleware before fosite runs, and is passed explicitly to every
// store call: a code or token of another tenant is simply not found.
type fositeStore struct {
	store   credentials.Store
	clients *clientLoader
}

var (
	_ fosite.Storage                = (*fositeStore)(nil)
	_ oauth2.CoreStorage            = (*fositeStore)(nil)
	_ oauth2.TokenRevocationStorage = (*fositeStore)(nil)
	_ pkce.PKCERequestStorage       = (*fositeStore)(nil)
	_ fstorage.Transactional        = (*fositeStore)(nil)
)

func tenantOf(ctx context.Context) (identity.Tenant, error) {
	t, ok := auth.TenantFrom(ctx)
	if !ok {
		return t, errors.New("oauth: no tenant in context")
	}
	return t, nil
}

// storedRequest is a fosite request as Visor stores it: no client secret,
// no code, no verifier, no token (see keepForm).
type storedRequest struct {
	ID                string     `json:"id"`
	RequestedAt       time.Time  `json:"requested_at"`
	ClientID          string     `json:"client_id"`
	RequestedScopes   []string   `json:"requested_scopes"`
	GrantedScopes     []string   `json:"granted_scopes"`
	RequestedAudience []string   `json:"requested_audience"`
	GrantedAudience   []string   `json:"granted_audience"`
	Form              url.Values `json:"form"`
	Session           *Session   `json:"session"`
}

// keepForm lists the request parameters worth keeping: what PKCE and the
// redirect_uri check read back. Everything else, secrets included, is
// dropped before storage.
var keepForm = []string{"code_challenge", "code_challenge_method", "redirect_uri", "scope", "response_type",
	"client_id", "grant_type", "resource"}

func sessionOf(r fosite.Requester) *Session {
	if s, ok := r.GetSession().(*Session); ok && s != nil {
		return s
	}
	return &Session{}
}

var expiryType = map[credentials.TokenKind]fosite.TokenType{
	credentials.KindCode: fosite.AuthorizeCode, credentials.KindPKCE: fosite.AuthorizeCode,
	credentials.KindAccess: fosite.AccessToken, credentials.KindRefresh: fosite.RefreshToken,
}

func (s *fositeStore) create(ctx context.Context, kind credentials.TokenKind, signature string, r fosite.Requester) error {
	t, err := tenantOf(ctx)
	if err != nil {
		return err
	}
	sess := sessionOf(r)
	form := url.Values{}
	for _, k := range keepForm {
		if v, ok := r.GetRequestForm()[k]; ok {
			form[k] = v
		}
	}
	raw, err := json.Marshal(storedRequest{ID: r.GetID(), RequestedAt: r.GetRequestedAt(), ClientID: r.GetClient().GetID(),
		RequestedScopes: r.GetRequestedScopes(), GrantedScopes: r.GetGrantedScopes(),
		RequestedAudience: r.GetRequestedAudience(), GrantedAudience: r.GetGrantedAudience(), Form: form, Session: sess})
	if err != nil {
		return err
	}
	exp := sess.GetExpiresAt(expiryType[kind])
	if exp.IsZero() {
		exp = time.Now().Add(90 * 24 * time.Hour)
	}
	return s.store.CreateToken(ctx, &credentials.Token{TenantID: t.ID, Kind: kind, Signature: signature, RequestID: r.GetID(),
		ClientID: r.GetClient().GetID(), MemberID: sess.MemberID, Request: raw, ExpiresAt: exp})
}

// get loads a stored request. inactive is the error fosite expects for a
// used code or rotated token; the request is returned with it.
func (s *fositeStore) get(ctx context.Context, kind credentials.TokenKind, signature string, inactive error) (fosite.Requester, error) {
	t, err := tenantOf(ctx)
	if err != nil {
		return nil, err
	}
	row, err := s.store.Token(ctx, t.ID, kind, signature)
	if fault.Is(err, fault.NotFound) {
		return nil, fosite.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var sr storedRequest
	if err := json.Unmarshal(row.Request, &sr); err != nil {
		return nil, err
	}
	c, err := s.store.Client(ctx, t.ID, sr.ClientID)
	if fault.Is(err, fault.NotFound) {
		return nil, fosite.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if sr.Session == nil {
		sr.Session = &Session{}
	}
	req := &fosite.Request{ID: sr.ID, RequestedAt: sr.RequestedAt, Client: s.clients.fositeClient(ctx, t, c),
		RequestedScope: sr.RequestedScopes, GrantedScope: sr.GrantedScopes, RequestedAudience: sr.RequestedAudience,
		GrantedAudience: sr.GrantedAudience, Form: sr.Form, Session: sr.Session}
	if !row.Active {
		if inactive == nil {
			return nil, fosite.ErrNotFound
		}
		return req, inactive
	}
	return req, nil
}

func (s *fositeStore) deactivate(ctx context.Context, kind credentials.TokenKind, signature string) error {
	t, err := tenantOf(ctx)
	if err != nil {
		return err
	}
	err = s.store.DeactivateToken(ctx, t.ID, kind, signature)
	if fault.Is(err, fault.NotFound) {
		return fosite.ErrNotFound
	}
	return err
}

func (s *fositeStore) delete(ctx context.Context, kind credentials.TokenKind, signature string) error {
	t, err := tenantOf(ctx)
	if err != nil {
		return err
	}
	return s.store.DeleteToken(ctx, t.ID, kind, signature)
}

func (s *fositeStore) revoke(ctx context.Context, kind credentials.TokenKind, requestID string) error {
	t, err := tenantOf(ctx)
	if err != nil {
		return err
	}
	if err := s.store.RevokeGrant(ctx, t.ID, kind, requestID); err != nil {
		return err
	}
	if m, ok := ctx.Value(revokedKey{}).(*revoked); ok {
		m.tenant.Store(&t.ID)
	}
	return nil
}

type revokedKey struct{}

// revoked notes, for the handler that runs fosite, that a grant was
// revoked during the request: fosite commits its transaction before
// returning, so the handler announces the change after the commit.
type revoked struct{ tenant atomic.Pointer[uuid.UUID] }

// WatchRevocations returns ctx noting revocations, and a function that
// announces them: the endpoint that runs fosite calls it once fosite is
// done and its transaction committed.
func (s *Server) WatchRevocations(ctx context.Context) (context.Context, func()) {
	m := &revoked{}
	return context.WithValue(ctx, revokedKey{}, m), func() {
		if id := m.tenant.Load(); id != nil {
			s.identity.Announce(ctx, changes.Event{TenantID: *id, Kind: changes.ClientChanged})
		}
	}
}

// GetClient loads a client of the context's tenant; an https client_id is
// a Client ID Metadata Document, fetched and cached.
func (s *fositeStore) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	t, err := tenantOf(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.clients.load(ctx, t, id)
	if err != nil {
		return nil, err
	}
	return s.clients.fositeClient(ctx, t, c), nil
}

// ClientAssertionJWTValid accepts: private_key_jwt is not offered.
func (s *fositeStore) ClientAssertionJWTValid(context.Context, string) error { return nil }

// SetClientAssertionJWT is a no-op: private_key_jwt is not offered.
func (s *fositeStore) SetClientAssertionJWT(context.Context, string, time.Time) error { return nil }

func (s *fositeStore) CreateAuthorizeCodeSession(ctx context.Context, code string, r fosite.Requester) error {
	return s.create(ctx, credentials.KindCode, code, r)
}

func (s *fositeStore) GetAuthorizeCodeSession(ctx context.Context, code string, _ fosite.Session) (fosite.Requester, error) {
	return s.get(ctx, credentials.KindCode, code, fosite.ErrInvalidatedAuthorizeCode)
}

// InvalidateAuthorizeCodeSession marks the code used. A code already used
// (a concurrent redemption) fails, rolling the redemption back.
func (s *fositeStore) InvalidateAuthorizeCodeSession(ctx context.Context, code string) error {
	return s.deactivate(ctx, credentials.KindCode, code)
}

func (s *fositeStore) CreatePKCERequestSession(ctx context.Context, sig string, r fosite.Requester) error {
	return s.create(ctx, credentials.KindPKCE, sig, r)
}

func (s *fositeStore) GetPKCERequestSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	return s.get(ctx, credentials.KindPKCE, sig, nil)
}

func (s *fositeStore) DeletePKCERequestSession(ctx context.Context, sig string) error {
	return s.delete(ctx, credentials.KindPKCE, sig)
}

func (s *fositeStore) CreateAccessTokenSession(ctx context.Context, sig string, r fosite.Requester) error {
	return s.create(ctx, credentials.KindAccess, sig, r)
}

func (s *fositeStore) GetAccessTokenSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	return s.get(ctx, credentials.KindAccess, sig, nil)
}

func (s *fositeStore) DeleteAccessTokenSession(ctx context.Context, sig string) error {
	return s.delete(ctx, credentials.KindAccess, sig)
}

func (s *fositeStore) CreateRefreshTokenSession(ctx context.Context, sig, _ string, r fosite.Requester) error {
	return s.create(ctx, credentials.KindRefresh, sig, r)
}

// GetRefreshTokenSession returns fosite.ErrInactiveToken (with the request)
// for a rotated or revoked refresh token, which makes fosite treat its use
// as reuse and revoke the whole grant.
func (s *fositeStore) GetRefreshTokenSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	return s.get(ctx, credentials.KindRefresh, sig, fosite.ErrInactiveToken)
}

func (s *fositeStore) DeleteRefreshTokenSession(ctx context.Context, sig string) error {
	return s.delete(ctx, credentials.KindRefresh, sig)
}

// RotateRefreshToken retires the grant's current refresh and access tokens
// before fosite stores their successors.
func (s *fositeStore) RotateRefreshToken(ctx context.Context, requestID, _ string) error {
	if err := s.revoke(ctx, credentials.KindRefresh, requestID); err != nil {
		return err
	}
	return s.revoke(ctx, credentials.KindAccess, requestID)
}

func (s *fositeStore) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return s.revoke(ctx, credentials.KindRefresh, requestID)
}

func (s *fositeStore) RevokeAccessToken(ctx context.Context, requestID string) error {
	return s.revoke(ctx, credentials.KindAccess, requestID)
}

func (s *fositeStore) BeginTX(ctx context.Context) (context.Context, error) {
	return s.store.Begin(ctx)
}
func (s *fositeStore) Commit(ctx context.Context) error   { return s.store.Commit(ctx) }
func (s *fositeStore) Rollback(ctx context.Context) error { return s.store.Rollback(ctx) }
