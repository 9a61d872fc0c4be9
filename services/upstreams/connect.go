package upstreams

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// stateTTL is how long a member has to consent upstream after clicking
// Connect.
const stateTTL = 10 * time.Minute

// errNotConnected marks the refusal of a call that has no token to carry:
// a member must Connect first.
var errNotConnected = errors.New("not connected")

// MemberOf is the member a principal acts for: the member of a dashboard
// session or an OAuth token, or the member who made an API key; uuid.Nil
// for none (the platform token, AI employees' own keys).
func MemberOf(p identity.Principal) uuid.UUID {
	if p.MemberID != uuid.Nil {
		return p.MemberID
	}
	return p.CreatorID
}

// tokenMember is whose token a call to srv by p carries: the member p
// acts for, for a server with a token per member; uuid.Nil (the tenant's
// token, or none) otherwise.
func tokenMember(srv Server, p identity.Principal) uuid.UUID {
	if srv.Auth.Kind != AuthOAuth || !srv.Auth.PerMember {
		return uuid.Nil
	}
	return MemberOf(p)
}

// ctxMember is tokenMember for the principal of ctx.
func ctxMember(ctx context.Context, srv Server) uuid.UUID {
	p, _ := identity.PrincipalFrom(ctx)
	return tokenMember(srv, p)
}

// notConnected is the refusal of a call to srv that has no token to carry.
func notConnected(srv Server, member uuid.UUID) error {
	switch {
	case srv.Auth.PerMember && member == uuid.Nil:
		return fault.Newf(fault.Forbidden, errNotConnected, "upstream server %s is reached with the token of the member a call acts for, and this caller acts for no member", srv.Name)
	case srv.Auth.PerMember:
		return fault.Newf(fault.Forbidden, errNotConnected, "upstream server %s needs your own authorization: Connect it in the dashboard (MCP servers, Connect), then call again", srv.Name)
	}
	return fault.Newf(fault.Forbidden, errNotConnected, "upstream server %s is not connected: an administrator must Connect it in the dashboard (MCP servers, Connect)", srv.Name)
}

// ConnectRequest is a member's click on Connect.
type ConnectRequest struct {
	TenantID uuid.UUID
	Server   string // id or name
	// Principal is the member's dashboard session; Session is its id, to
	// which the state is bound.
	Principal identity.Principal
	Session   string
	// RedirectURI is where the authorization server sends the member back
	// (the dashboard's callback). MetadataURL is the URL of Visor's Client
	// ID Metadata Document naming that redirect URI ("" when Visor's base
	// URL is not https, so it cannot be a client id).
	RedirectURI string
	MetadataURL string
}

// Connected reports whether Visor holds a token for srv that a call by p
// would carry.
func (s *Service) Connected(ctx context.Context, srv Server, p identity.Principal) bool {
	if srv.Auth.Kind != AuthOAuth {
		return false
	}
	_, err := s.cfg.Store.Token(ctx, srv.TenantID, srv.ID, tokenMember(srv, p))
	return err == nil
}

// BeginConnect starts the authorization code flow for a server with
// auth.kind oauth: it reads the server's and its authorization server's
// metadata, registers Visor as a client when it is not yet registered
// with this redirect URI (by its Client ID Metadata Document when the
// authorization server takes one and Visor has an https one, else by
// dynamic registration), keeps a single-use state bound to the member's
// session with a PKCE verifier, and returns the authorization URL to send
// the member's browser to. A server with one token for the tenant needs
// a member who may manage settings. Errors: NotFound, Invalid for a server
// of another kind, Forbidden, Unavailable with what the upstream lacks.
func (s *Service) BeginConnect(ctx context.Context, r ConnectRequest) (string, error) {
	srv, err := s.Server(ctx, r.TenantID, r.Server)
	if err != nil {
		return "", err
	}
	if srv.Auth.Kind != AuthOAuth {
		return "", fault.New(fault.Invalid, "server %s does not use the OAuth authorization code flow (auth.kind oauth); there is nothing to connect", srv.Name)
	}
	if s.oauth == nil || s.cfg.Keys == nil {
		return "", fault.New(fault.Unavailable, "connecting upstream servers needs OAuth and a secret key (VISOR_SECRET_KEYS), which this deployment lacks")
	}
	member := MemberOf(r.Principal)
	if member == uuid.Nil || r.Session == "" {
		return "", fault.New(fault.Forbidden, "only a member signed in to the dashboard can connect a server")
	}
	owner := member
	if !srv.Auth.PerMember {
		if err := r.Principal.Check(identity.ManageSettings); err != nil {
			return "", fault.Newf(fault.Forbidden, err, "server %s has one token for the whole tenant; connecting it needs a member who may manage settings", srv.Name)
		}
		owner = uuid.Nil
	}
	a, err := s.oauth.Discover(ctx, srv.URL, srv.Auth)
	if err != nil {
		return "", fault.Newf(fault.Unavailable, err, "upstream server %s: its OAuth metadata cannot be read: %s", srv.Name, fault.Message(asUnavailable(err)))
	}
	if a.AuthorizationEndpoint == "" {
		return "", fault.New(fault.Unavailable, "upstream server %s: its authorization server has no authorization_endpoint", srv.Name)
	}
	if !slices.Contains(a.CodeChallengeMethods, "S256") {
		return "", fault.New(fault.Unavailable, "upstream server %s: its authorization server does not offer PKCE with S256, which Visor requires", srv.Name)
	}
	if srv, a, err = s.register(ctx, srv, a, r); err != nil {
		return "", err
	}
	state, verifier := random(), random()
	sealed, err := s.cfg.Keys.Seal([]byte(verifier), sealContext(srv.TenantID, srv.ID, "pkce:"+hash(state)))
	if err != nil {
		return "", err
	}
	if err := s.cfg.Store.SaveState(ctx, State{TenantID: srv.TenantID, StateHash: hash(state), ServerID: srv.ID, MemberID: member,
		TokenMemberID: owner, SessionHash: hash(r.Session), SealedVerifier: sealed, RedirectURI: r.RedirectURI,
		ExpiresAt: time.Now().Add(stateTTL)}); err != nil {
		return "", err
	}
	u, err := url.Parse(a.AuthorizationEndpoint)
	if err != nil {
		return "", fault.New(fault.Unavailable, "upstream server %s: its authorization endpoint is not a URL", srv.Name)
	}
	sum := sha256.Sum256([]byte(verifier))
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", a.ClientID)
	q.Set("redirect_uri", r.RedirectURI)
	q.Set("state", state)
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	q.Set("code_challenge_method", "S256")
	q.Set("resource", a.Resource)
	if len(a.Scopes) > 0 {
		q.Set("scope", strings.Join(a.Scopes, " "))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// register saves a's discovered metadata on srv and, when Visor is not
// registered with r's redirect URI, registers it.
func (s *Service) register(ctx context.Context, srv Server, a Auth, r ConnectRequest) (Server, Auth, error) {
	var secret string
	if a.Registration != "" && srv.Auth.Issuer != "" && a.Issuer != srv.Auth.Issuer {
		a.ClientID = "" // registered with another authorization server
	}
	switch {
	case a.ClientID != "" && (a.Registration == "" || a.RedirectURI == r.RedirectURI):
		// Given by the operator, or registered with this redirect URI.
	case a.MetadataDocuments && strings.HasPrefix(r.MetadataURL, "https://"):
		a.ClientID, a.Registration = r.MetadataURL, RegisteredByDocument
	case a.RegistrationEndpoint != "":
		id, sec, err := s.oauth.Register(ctx, a, r.RedirectURI)
		if err != nil {
			return srv, a, fault.Newf(fault.Unavailable, err, "upstream server %s: registering Visor as its client failed: %s", srv.Name, fault.Message(asUnavailable(err)))
		}
		a.ClientID, a.Registration, secret = id, RegisteredDynamically, sec
	default:
		return srv, a, fault.New(fault.Unavailable, "upstream server %s: its authorization server takes neither a Client ID Metadata Document (Visor offers one when its base URL is https) nor dynamic registration; register Visor there by hand and give the server auth.client_id (and its client_secret secret)", srv.Name)
	}
	if a.Registration != "" {
		a.RedirectURI = r.RedirectURI
	}
	if secret != "" {
		if _, err := s.SetSecret(ctx, srv.TenantID, srv.ID.String(), SecretClientSecret, "client_secret", secret); err != nil {
			return srv, a, err
		}
	} else if a.Registration != "" {
		// A public client has no secret; an old one would be sent wrongly.
		if err := s.cfg.Store.DeleteSecret(ctx, srv.TenantID, srv.ID, SecretClientSecret, "client_secret"); err != nil && !fault.Is(err, fault.NotFound) {
			return srv, a, err
		}
	}
	if reflect.DeepEqual(a, srv.Auth) {
		return srv, a, nil
	}
	srv, err := s.cfg.Store.Update(ctx, srv.TenantID, srv.ID, func(x *Server) error { x.Auth = a; return nil })
	if err != nil {
		return srv, a, err
	}
	s.changed(srv)
	return srv, a, nil
}

// Callback is what the authorization server sent the member back with.
type Callback struct {
	State, Code string
	// Error is the authorization server's error code ("" for none), with
	// its description.
	Error, ErrorDescription string
	// Issuer is the iss parameter (RFC 9207), when the server sends one.
	Issuer string
}

// FinishConnect completes a Connect: it takes the state (once, unexpired,
// begun by the same member in the same session), exchanges the code for
// tokens with the PKCE verifier and the resource indicator, keeps them
// sealed for the tenant or the member, and lists the server's tools with
// them. Errors: Invalid for an unknown, used, expired or foreign state;
// Unavailable when the authorization server refused or failed.
func (s *Service) FinishConnect(ctx context.Context, tenantID uuid.UUID, p identity.Principal, session string, cb Callback) (Server, error) {
	if cb.State == "" {
		return Server{}, fault.New(fault.Invalid, "the authorization server sent no state; click Connect again")
	}
	st, err := s.cfg.Store.TakeState(ctx, tenantID, hash(cb.State), MemberOf(p), hash(session))
	if fault.Is(err, fault.NotFound) {
		return Server{}, fault.New(fault.Invalid, "this Connect was used already, has expired, or was begun in another session; click Connect again")
	}
	if err != nil {
		return Server{}, err
	}
	srv, err := s.cfg.Store.Server(ctx, tenantID, st.ServerID)
	if err != nil {
		return Server{}, err
	}
	if cb.Error != "" {
		msg := cb.Error
		if cb.ErrorDescription != "" {
			msg += ": " + cb.ErrorDescription
		}
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return srv, fault.New(fault.Unavailable, "upstream server %s: its authorization server answered %s", srv.Name, msg)
	}
	if cb.Code == "" {
		return srv, fault.New(fault.Invalid, "the authorization server sent no code; click Connect again")
	}
	if cb.Issuer != "" && strings.TrimSuffix(cb.Issuer, "/") != strings.TrimSuffix(srv.Auth.Issuer, "/") {
		return srv, fault.New(fault.Invalid, "the authorization answer names issuer %q, not %s's %q", cb.Issuer, srv.Name, srv.Auth.Issuer)
	}
	verifier, err := s.open(srv, st.SealedVerifier, "pkce:"+st.StateHash)
	if err != nil {
		return srv, err
	}
	a, secret, err := s.oauthClient(ctx, srv)
	if err != nil {
		return srv, err
	}
	set, err := s.oauth.Exchange(ctx, a, secret, cb.Code, verifier, st.RedirectURI)
	if err != nil {
		return srv, fault.Newf(fault.Unavailable, err, "upstream server %s: the token request failed: %s", srv.Name, fault.Message(asUnavailable(err)))
	}
	if err := s.saveToken(ctx, srv, st.TokenMemberID, set); err != nil {
		return srv, err
	}
	s.pool.forgetMember(srv.ID, st.TokenMemberID)
	if srv.Enabled {
		_ = s.refresh(ctx, srv, st.TokenMemberID) // its error is saved on the row
	}
	return s.cfg.Store.Server(ctx, tenantID, srv.ID)
}

// Disconnect revokes and deletes the token a call by p would carry (the
// member's own, or the tenant's for a member who may manage settings).
// Errors: NotFound when there is none, Forbidden.
func (s *Service) Disconnect(ctx context.Context, tenantID uuid.UUID, ref string, p identity.Principal) (Server, error) {
	srv, err := s.Server(ctx, tenantID, ref)
	if err != nil {
		return Server{}, err
	}
	if srv.Auth.Kind != AuthOAuth {
		return srv, fault.New(fault.Invalid, "server %s does not use the OAuth authorization code flow; there is nothing to disconnect", srv.Name)
	}
	if !srv.Auth.PerMember {
		if err := p.Check(identity.ManageSettings); err != nil {
			return srv, fault.Newf(fault.Forbidden, err, "server %s has one token for the whole tenant; disconnecting it needs a member who may manage settings", srv.Name)
		}
	}
	member := tokenMember(srv, p)
	tok, err := s.cfg.Store.Token(ctx, tenantID, srv.ID, member)
	if err != nil {
		return srv, err
	}
	if err := s.cfg.Store.DeleteToken(ctx, tenantID, srv.ID, member); err != nil {
		return srv, err
	}
	s.pool.forgetMember(srv.ID, member)
	if s.oauth != nil {
		if a, secret, err := s.oauthClient(ctx, srv); err == nil {
			s.revokeAll(ctx, srv, a, secret, []Token{tok})
		}
	}
	return srv, nil
}

// memberToken returns the token held for member (uuid.Nil: the tenant's),
// refreshing it with its refresh token when it is about to expire. One
// refresh runs at a time per server and member on a replica; a refresh
// refused because another (on another replica) rotated the token first
// uses the token it saved. A token that cannot be refreshed is deleted:
// the member must Connect again.
func (s *Service) memberToken(ctx context.Context, srv Server, member uuid.UUID) (string, error) {
	tok, ok, err := s.liveToken(ctx, srv, member)
	if ok || err != nil {
		return tok, err
	}
	mu, _ := s.tokenLocks.LoadOrStore(poolKey{srv.ID, member}, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if tok, ok, err := s.liveToken(ctx, srv, member); ok || err != nil {
		return tok, err // refreshed while this call waited
	}
	held, err := s.cfg.Store.Token(ctx, srv.TenantID, srv.ID, member)
	if err != nil {
		return "", err
	}
	if held.SealedRefresh == "" {
		_ = s.cfg.Store.DeleteToken(ctx, srv.TenantID, srv.ID, member)
		return "", notConnected(srv, member)
	}
	refresh, err := s.open(srv, held.SealedRefresh, "refresh_token")
	if err != nil {
		return "", err
	}
	a, secret, err := s.oauthClient(ctx, srv)
	if err != nil {
		return "", err
	}
	set, err := s.oauth.Refresh(ctx, a, secret, refresh)
	if err != nil {
		// A refused refresh token will not work again; a server that is
		// down may answer the next time.
		if !strings.Contains(fault.Message(err), "invalid_grant") {
			return "", fault.Newf(fault.Unavailable, err, "upstream server %s: refreshing the token failed: %s", srv.Name, fault.Message(asUnavailable(err)))
		}
		if now, nerr := s.cfg.Store.Token(ctx, srv.TenantID, srv.ID, member); nerr == nil && now.SealedRefresh != held.SealedRefresh {
			return s.open(srv, now.SealedAccess, "access_token") // another replica refreshed first
		}
		_ = s.cfg.Store.DeleteToken(ctx, srv.TenantID, srv.ID, member)
		return "", notConnected(srv, member)
	}
	if set.RefreshToken == "" {
		set.RefreshToken = refresh // the server keeps the old one valid
	}
	if err := s.saveToken(ctx, srv, member, set); err != nil {
		return "", err
	}
	return set.AccessToken, nil
}

// liveToken returns the held token when it is not about to expire (ok).
// Errors: the notConnected refusal when there is none.
func (s *Service) liveToken(ctx context.Context, srv Server, member uuid.UUID) (string, bool, error) {
	tok, err := s.cfg.Store.Token(ctx, srv.TenantID, srv.ID, member)
	if fault.Is(err, fault.NotFound) {
		return "", false, notConnected(srv, member)
	}
	if err != nil {
		return "", false, err
	}
	if tok.ExpiresAt != nil && time.Until(*tok.ExpiresAt) <= tokenSkew {
		return "", false, nil
	}
	v, err := s.open(srv, tok.SealedAccess, "access_token")
	return v, err == nil, err
}

// random returns 32 random bytes, base64url: a state or a PKCE verifier.
func random() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
