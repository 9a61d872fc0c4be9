package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"time"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// SessionCookieName names the member's session cookie: HttpOnly and
// SameSite=Lax (it must ride the top-level redirect from a client to the
// authorization endpoint).
const SessionCookieName = "visor_session"

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashSession is how a session is stored: only its SHA-256, never the
// cookie's value.
func hashSession(v string) []byte {
	sum := sha256.Sum256([]byte(v))
	return sum[:]
}

// StartSession signs member m of t in: it stores a new session and returns
// the cookie value (never stored) and when the session ends.
func (s *Server) StartSession(ctx context.Context, t identity.Tenant, m identity.Member) (string, time.Time, error) {
	value := randomToken()
	ss := credentials.Session{TenantID: t.ID, IDHash: hashSession(value), MemberID: m.ID, ExpiresAt: s.now().Add(s.cfg.SessionTTL)}
	if err := s.store.CreateSession(ctx, &ss); err != nil {
		return "", time.Time{}, err
	}
	return value, ss.ExpiresAt, nil
}

// EndSession deletes the session whose cookie value is value; an unknown
// one is no error.
func (s *Server) EndSession(ctx context.Context, value string) error {
	return s.store.DeleteSession(ctx, hashSession(value))
}

// SessionMember returns the member of t signed in with the session cookie
// value, if that session is live and belongs to t.
func (s *Server) SessionMember(ctx context.Context, t identity.Tenant, value string) (identity.Member, bool) {
	_, m, err := s.session(ctx, value)
	if err != nil || m.TenantID != t.ID {
		return identity.Member{}, false
	}
	return m, true
}

func (s *Server) session(ctx context.Context, value string) (credentials.Session, identity.Member, error) {
	ss, err := s.store.SessionByHash(ctx, hashSession(value), s.now())
	if err != nil {
		return ss, identity.Member{}, err
	}
	m, err := s.identity.Member(ctx, ss.TenantID, ss.MemberID)
	return ss, m, err
}

// SessionCookie implements auth.SessionResolver.
func (s *Server) SessionCookie() string { return SessionCookieName }

// ResolveSession implements auth.SessionResolver: a member's session acts
// in the admin API as an operator-kind principal carrying the member and
// its current role, with the scopes that role holds (identity.Role.Scopes).
func (s *Server) ResolveSession(ctx context.Context, value string) (identity.Tenant, identity.Principal, error) {
	ss, m, err := s.session(ctx, value)
	if fault.Is(err, fault.NotFound) {
		return identity.Tenant{}, identity.Principal{}, fault.New(fault.Unauthorized, "the session has ended; sign in again")
	}
	if err != nil {
		return identity.Tenant{}, identity.Principal{}, err
	}
	t, err := s.identity.Tenant(ctx, ss.TenantID)
	if err != nil {
		return t, identity.Principal{}, err
	}
	return t, identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindOperator, MemberID: m.ID, Role: m.Role,
		CredentialID: identity.Credential{Kind: identity.CredentialSession, ID: hex.EncodeToString(ss.IDHash[:8])}.String(), Scopes: m.Role.Scopes()}, nil
}

// DeviceMAC binds a device cookie's nonce to one member (tenant and email),
// with a key derived from the server's secret: web/oauth's device cookie
// carries nonce and MAC, and only this server can have made the pair.
func (s *Server) DeviceMAC(t identity.Tenant, email, nonce string) string {
	m := hmac.New(sha256.New, s.deviceKey)
	m.Write([]byte(t.ID.String() + "\x00" + email + "\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
