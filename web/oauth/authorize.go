package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/ory/fosite"

	"github.com/visorhq/visor/auth"
	provider "github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// errInvalidTarget is RFC 8707's error for a resource this server does not
// issue tokens for.
func errInvalidTarget() *fosite.RFC6749Error {
	return &fosite.RFC6749Error{ErrorField: "invalid_target", CodeField: http.StatusBadRequest,
		DescriptionField: "The requested resource is not this tenant's MCP endpoint."}
}

// sameResource reports whether a resource parameter names the tenant's MCP
// endpoint: exactly, or with the trailing slash some clients add.
func sameResource(got, canonical string) bool { return got == canonical || got == canonical+"/" }

// issWriter adds the RFC 9207 iss parameter to every redirect back to the
// client, successes and errors alike. With dropState it removes the
// placeholder state of a request that sent none.
type issWriter struct {
	http.ResponseWriter
	iss       string
	dropState bool
}

// noState stands in for a missing state: OAuth 2.1 makes state optional
// under PKCE, but fosite insists on one. It never reaches the client.
const noState = "visor-no-state"

func (w *issWriter) WriteHeader(code int) {
	if loc := w.Header().Get("Location"); code >= 300 && code < 400 && loc != "" {
		if u, err := url.Parse(loc); err == nil {
			q := u.Query()
			q.Set("iss", w.iss)
			if w.dropState {
				q.Del("state")
			}
			u.RawQuery = q.Encode()
			w.Header().Set("Location", u.String())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// errorPage renders an error page; title and msg are message keys.
func (s *Server) errorPage(c echo.Context, t identity.Tenant, status int, title, msg string, args ...any) error {
	return s.pages.Problem(c, t, status, Problem{Title: title, Message: msg, Args: args})
}

// authorize is the authorization endpoint (GET) and the consent form's
// target (POST with a decision).
func (s *Server) authorize(c echo.Context) error {
	req := c.Request()
	ctx := req.Context()
	t, _ := auth.TenantFrom(ctx)
	w := &issWriter{ResponseWriter: c.Response(), iss: s.urls.Issuer(t.Slug)}
	if err := req.ParseForm(); err != nil {
		return s.errorPage(c, t, http.StatusBadRequest, "oauth.bad_request", "oauth.unreadable")
	}
	if req.Form.Has("scope") {
		// Scopes Visor does not know (offline_access, a client's own names)
		// are ignored rather than refused (RFC 6749 §3.3); refresh tokens
		// are issued anyway.
		req.Form.Set("scope", strings.Join(provider.KnownScopes(req.Form.Get("scope")), " "))
	}
	if req.Form.Get("state") == "" {
		req.Form.Set("state", noState)
		w.dropState = true
	}
	if p, bad := s.checkClientRedirect(ctx, t, req.Form); bad {
		return s.pages.Problem(c, t, http.StatusBadRequest, p)
	}
	// fosite lets a loopback IP's port vary but not localhost's; tell the
	// client loader the requested URI passed provider.MatchRedirect.
	ctx = provider.WithMatchedRedirect(ctx, req.Form.Get("client_id"), req.Form.Get("redirect_uri"))
	ar, err := s.fosite.NewAuthorizeRequest(ctx, req)
	if err != nil {
		s.fosite.WriteAuthorizeError(ctx, w, ar, err)
		return nil
	}
	if err := s.checkAuthorizeParams(t, ar); err != nil {
		s.fosite.WriteAuthorizeError(ctx, w, ar, err)
		return nil
	}
	silent := ar.GetRequestForm().Get("prompt") == "none"
	m, ok := s.member(c, t)
	if !ok && silent {
		s.fosite.WriteAuthorizeError(ctx, w, ar, fosite.ErrLoginRequired)
		return nil
	}
	if !ok {
		return s.renderLogin(c, t, http.StatusOK, LoginView{ReturnTo: "/t/" + t.Slug + "/oauth/authorize?" + req.URL.RawQuery})
	}
	scopes, withheld := m.Role.Bound(ar.GetRequestedScopes())
	if len(scopes) == 0 {
		s.fosite.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHintf(
			"A %s member cannot grant the requested access.", m.Role))
		return nil
	}
	ar.SetRequestedScopes(scopes)
	clientID := ar.GetClient().GetID()
	if req.Method == http.MethodPost && req.PostForm.Has("decision") {
		if !s.pages.CheckCSRF(c) {
			return s.errorPage(c, t, http.StatusForbidden, "oauth.cannot_continue", msgConsentExpired)
		}
		if req.PostForm.Get("decision") != "allow" {
			s.fosite.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The member denied the request."))
			return nil
		}
		if err := s.core.AddConsent(ctx, t.ID, m.ID, clientID, scopes); err != nil {
			return s.fail(c, t, "record consent", err)
		}
		return s.issue(ctx, w, t, ar, m)
	}
	granted, err := s.core.Consent(ctx, t.ID, m.ID, clientID)
	if err != nil && !fault.Is(err, fault.NotFound) {
		return s.fail(c, t, "read consent", err)
	}
	prompt := ar.GetRequestForm().Get("prompt")
	if err == nil && covers(granted, scopes) && (prompt == "" || prompt == "none") {
		return s.issue(ctx, w, t, ar, m)
	}
	if silent {
		s.fosite.WriteAuthorizeError(ctx, w, ar, fosite.ErrConsentRequired)
		return nil
	}
	return s.renderConsent(c, t, ar, m, withheld)
}

func (s *Server) fail(c echo.Context, t identity.Tenant, what string, err error) error {
	s.log.ErrorContext(c.Request().Context(), what, "tenant", t.ID, "err", err)
	return s.errorPage(c, t, http.StatusServiceUnavailable, "oauth.try_later", "oauth.our_fault")
}

func covers(granted, requested []string) bool {
	for _, s := range requested {
		if !slices.Contains(granted, s) {
			return false
		}
	}
	return true
}

// checkClientRedirect refuses, without redirecting anywhere, a request whose
// client is unknown or whose redirect_uri does not match one the client
// registered (provider.MatchRedirect: exactly, but for a loopback port).
func (s *Server) checkClientRedirect(ctx context.Context, t identity.Tenant, form url.Values) (Problem, bool) {
	refuse := func(msg string, args ...any) (Problem, bool) {
		return Problem{Title: "oauth.cannot_continue", Message: msg, Args: args}, true
	}
	id := form.Get("client_id")
	if id == "" {
		return refuse("oauth.no_client_id")
	}
	c, err := s.core.Client(ctx, t, id)
	if err != nil {
		var re *fosite.RFC6749Error
		if errors.As(err, &re) && re.HintField != "" {
			return refuse("oauth.unknown_client_because", t.Name, re.HintField)
		}
		if !errors.As(err, &re) {
			s.log.ErrorContext(ctx, "load client", "tenant", t.ID, "err", err)
		}
		return refuse("oauth.unknown_client", t.Name)
	}
	if ru := form.Get("redirect_uri"); ru != "" && !provider.MatchRedirect(c.RedirectURIs, ru) {
		return refuse("oauth.redirect_mismatch")
	}
	return Problem{}, false
}

// checkAuthorizeParams refuses, before any sign-in, what would fail later:
// a resource other than this tenant's MCP endpoint, missing PKCE or a
// method other than S256. It also fills in the default scopes.
func (s *Server) checkAuthorizeParams(t identity.Tenant, ar fosite.AuthorizeRequester) error {
	form := ar.GetRequestForm()
	for _, r := range form["resource"] {
		if !sameResource(r, s.urls.Resource(t.Slug)) {
			return errInvalidTarget()
		}
	}
	if form.Get("code_challenge") == "" {
		return fosite.ErrInvalidRequest.WithHint("PKCE is required: send code_challenge with code_challenge_method=S256.")
	}
	if form.Get("code_challenge_method") != "S256" {
		return fosite.ErrInvalidRequest.WithHint("code_challenge_method must be S256; plain is not allowed.")
	}
	if len(ar.GetRequestedScopes()) == 0 {
		var def []string
		for _, sc := range strings.Fields(auth.DefaultChallengeScope) {
			if slices.Contains(ar.GetClient().GetScopes(), sc) {
				def = append(def, sc)
			}
		}
		ar.SetRequestedScopes(def)
	}
	return nil
}

// issue grants the requested scopes, binds the grant to the tenant's MCP
// endpoint and redirects back with a code, state and iss.
func (s *Server) issue(ctx context.Context, w http.ResponseWriter, t identity.Tenant, ar fosite.AuthorizeRequester, m identity.Member) error {
	for _, sc := range ar.GetRequestedScopes() {
		ar.GrantScope(sc)
	}
	ar.GrantAudience(s.urls.Resource(t.Slug))
	resp, err := s.fosite.NewAuthorizeResponse(ctx, ar, &provider.Session{MemberID: m.ID})
	if err != nil {
		s.logServerError(ctx, "authorize response", err)
		s.fosite.WriteAuthorizeError(ctx, w, ar, err)
		return nil
	}
	s.fosite.WriteAuthorizeResponse(ctx, w, ar, resp)
	return nil
}

func (s *Server) renderConsent(c echo.Context, t identity.Tenant, ar fosite.AuthorizeRequester, m identity.Member, withheld []string) error {
	ctx := c.Request().Context()
	cl, err := s.core.Client(ctx, t, ar.GetClient().GetID())
	if err != nil {
		return s.fail(c, t, "load client for consent", err)
	}
	shown, native, formTarget := redirectTarget(ar.GetRedirectURI())
	v := ConsentView{MemberID: m.ID, ClientName: cl.Name, ClientID: cl.ID, RedirectHost: shown, NativeApp: native, MemberEmail: m.Email,
		Action: "/t/" + t.Slug + "/oauth/authorize?" + c.Request().URL.RawQuery,
		Scopes: s.describeScopes(t, ar.GetRequestedScopes()), Withheld: withheld, Role: m.Role}
	if v.ClientName == "" {
		v.ClientName = cl.ID
	}
	// Chrome applies form-action to the redirect that follows the post.
	return s.pages.Consent(c, t, v, formTarget)
}

// redirectTarget names where the member is sent after consent (a host, or
// a native app's scheme, then native is true) and the CSP form-action
// source that allows it.
func redirectTarget(ru *url.URL) (shown string, native bool, source string) {
	if ru.Scheme == "http" || ru.Scheme == "https" {
		return ru.Host, false, ru.Scheme + "://" + ru.Host
	}
	if ru.Host != "" {
		return ru.Scheme + "://" + ru.Host, true, ru.Scheme + ":"
	}
	return ru.Scheme + ":", true, ru.Scheme + ":"
}
