package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
)

// OAuth is Visor as an OAuth client of upstream servers: metadata
// discovery (RFC 9728, RFC 8414), the client credentials grant with a
// resource indicator (RFC 8707), and revocation (RFC 7009). Every request
// goes through the outbound guard, and every URL a metadata document
// names is checked as a saved URL is. It implements upstreams.OAuthClient.
type OAuth struct {
	http     *egress.Client
	checkURL func(raw string) (string, error)
}

var _ upstreams.OAuthClient = (*OAuth)(nil)

// NewOAuth returns an OAuth client on guard; checkURL is the outbound
// guard's save-time check (egress.CheckURL with the dev hosts).
func NewOAuth(guard *egress.Client, checkURL func(raw string) (string, error)) *OAuth {
	return &OAuth{http: guard, checkURL: checkURL}
}

// wellKnown returns base's origin with /.well-known/<name> inserted
// before its path (RFC 8414 §3, RFC 9728 §3).
func wellKnown(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(u.Path, "/")
	return u.Scheme + "://" + u.Host + "/.well-known/" + name + path, nil
}

// Discover reads the server's protected-resource metadata and its first
// authorization server's metadata.
func (o *OAuth) Discover(ctx context.Context, serverURL string, a upstreams.Auth) (upstreams.Auth, error) {
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := o.getFirst(ctx, &prm, serverURL, "oauth-protected-resource"); err != nil {
		return a, err
	}
	if len(prm.AuthorizationServers) == 0 {
		return a, fault.New(fault.Unavailable, "the server's protected-resource metadata names no authorization server")
	}
	issuer, err := o.checkURL(prm.AuthorizationServers[0])
	if err != nil {
		return a, fault.Newf(fault.Unavailable, err, "the authorization server %s: %s", prm.AuthorizationServers[0], fault.Message(err))
	}
	var meta struct {
		Issuer                string   `json:"issuer"`
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		TokenEndpoint         string   `json:"token_endpoint"`
		RevocationEndpoint    string   `json:"revocation_endpoint"`
		RegistrationEndpoint  string   `json:"registration_endpoint"`
		MetadataDocuments     bool     `json:"client_id_metadata_document_supported"`
		CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	}
	if err := o.getFirst(ctx, &meta, issuer, "oauth-authorization-server", "openid-configuration"); err != nil {
		return a, err
	}
	if strings.TrimSuffix(meta.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return a, fault.New(fault.Unavailable, "the authorization server's metadata names issuer %q, not %q", meta.Issuer, issuer)
	}
	for _, e := range []*string{&meta.AuthorizationEndpoint, &meta.TokenEndpoint, &meta.RevocationEndpoint, &meta.RegistrationEndpoint} {
		if *e == "" {
			continue
		}
		if *e, err = o.checkURL(*e); err != nil {
			return a, fault.Newf(fault.Unavailable, err, "the authorization server's metadata: %s", fault.Message(err))
		}
	}
	if meta.TokenEndpoint == "" {
		return a, fault.New(fault.Unavailable, "the authorization server's metadata has no token_endpoint")
	}
	a.Issuer, a.AuthorizationEndpoint, a.TokenEndpoint, a.RevocationEndpoint = meta.Issuer, meta.AuthorizationEndpoint, meta.TokenEndpoint, meta.RevocationEndpoint
	a.RegistrationEndpoint, a.MetadataDocuments, a.CodeChallengeMethods = meta.RegistrationEndpoint, meta.MetadataDocuments, meta.CodeChallengeMethods
	if a.Resource == "" {
		a.Resource = serverURL
	}
	if prm.Resource != "" {
		if !coversServer(prm.Resource, serverURL) {
			return a, fault.New(fault.Unavailable, "the server's protected-resource metadata names resource %q, which is not %s nor a parent of it (RFC 9728 §3.3)",
				prm.Resource, serverURL)
		}
		a.Resource = prm.Resource
	}
	return a, nil
}

// coversServer reports whether resource, from a server's protected-resource
// metadata, identifies the server at serverURL: the same URL, or a parent
// of it on the same origin. Any other resource would have Visor ask for a
// token meant for another server, and send it to this one.
func coversServer(resource, serverURL string) bool {
	r, err := url.Parse(resource)
	if err != nil || r.RawQuery != "" || r.Fragment != "" || r.User != nil {
		return false
	}
	s, err := url.Parse(serverURL)
	if err != nil || !strings.EqualFold(r.Scheme, s.Scheme) || !strings.EqualFold(r.Host, s.Host) {
		return false
	}
	rp, sp := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(s.Path, "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

// getFirst reads the first of the well-known documents of base that
// answers 200 into v.
func (o *OAuth) getFirst(ctx context.Context, v any, base string, names ...string) error {
	var last error
	for _, name := range names {
		for _, u := range candidates(base, name) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Accept", "application/json")
			res, err := o.http.Do(req)
			if err != nil {
				last = err
				continue
			}
			body, err := o.http.ReadBody(res)
			_ = res.Body.Close()
			if err == nil && res.StatusCode == http.StatusOK {
				if err := json.Unmarshal(body, v); err != nil {
					return fault.New(fault.Unavailable, "%s is not JSON metadata", u)
				}
				return nil
			}
			last = fmt.Errorf("%s answered %d", u, res.StatusCode)
		}
	}
	return fault.Newf(fault.Unavailable, last, "no %s metadata: %v", names[0], last)
}

// candidates are the path-inserted well-known URL and the root one.
func candidates(base, name string) []string {
	first, err := wellKnown(base, name)
	if err != nil {
		return nil
	}
	u, _ := url.Parse(base)
	root := u.Scheme + "://" + u.Host + "/.well-known/" + name
	if first == root {
		return []string{root}
	}
	return []string{first, root}
}

// ClientCredentials asks for a token with the client credentials grant.
func (o *OAuth) ClientCredentials(ctx context.Context, a upstreams.Auth, secret string) (upstreams.TokenSet, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(a.Scopes) > 0 {
		form.Set("scope", strings.Join(a.Scopes, " "))
	}
	return o.token(ctx, a, secret, form)
}

// Exchange trades an authorization code for tokens (RFC 6749 §4.1.3) with
// the PKCE verifier (RFC 7636) and the resource indicator (RFC 8707).
func (o *OAuth) Exchange(ctx context.Context, a upstreams.Auth, secret, code, verifier, redirectURI string) (upstreams.TokenSet, error) {
	return o.token(ctx, a, secret, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"code_verifier": {verifier}, "redirect_uri": {redirectURI}})
}

// Refresh asks for new tokens with a refresh token (RFC 6749 §6).
func (o *OAuth) Refresh(ctx context.Context, a upstreams.Auth, secret, refreshToken string) (upstreams.TokenSet, error) {
	return o.token(ctx, a, secret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
}

// Register registers Visor by dynamic client registration (RFC 7591): a
// public client (no secret) with one redirect URI, for the authorization
// code and refresh token grants.
func (o *OAuth) Register(ctx context.Context, a upstreams.Auth, redirectURI string) (string, string, error) {
	body := map[string]any{"client_name": "Visor", "redirect_uris": []string{redirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none"}
	if len(a.Scopes) > 0 {
		body["scope"] = strings.Join(a.Scopes, " ")
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return "", "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.RegistrationEndpoint, strings.NewReader(string(raw)))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := o.http.Do(req)
	if err != nil {
		return "", "", fault.Newf(fault.Unavailable, err, "%s: %v", a.RegistrationEndpoint, err)
	}
	defer res.Body.Close()
	out, err := o.http.ReadBody(res)
	if err != nil {
		return "", "", err
	}
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(out, &e)
		return "", "", fault.New(fault.Unavailable, "%s answered %d %s", a.RegistrationEndpoint, res.StatusCode, e.Error)
	}
	var answer struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal(out, &answer); err != nil || answer.ClientID == "" {
		return "", "", fault.New(fault.Unavailable, "%s answered no client_id", a.RegistrationEndpoint)
	}
	return answer.ClientID, answer.ClientSecret, nil
}

// token posts a grant to the token endpoint, with a's resource indicator.
func (o *OAuth) token(ctx context.Context, a upstreams.Auth, secret string, form url.Values) (upstreams.TokenSet, error) {
	if a.Resource != "" {
		form.Set("resource", a.Resource)
	}
	var answer struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		ExpiresIn    int64  `json:"expires_in"`
		RefreshToken string `json:"refresh_token"`
		Scope        string `json:"scope"`
	}
	if err := o.post(ctx, a.TokenEndpoint, a.ClientID, secret, form, &answer); err != nil {
		return upstreams.TokenSet{}, err
	}
	if answer.AccessToken == "" || !strings.EqualFold(answer.TokenType, "bearer") {
		return upstreams.TokenSet{}, fault.New(fault.Unavailable, "the token endpoint answered no bearer token")
	}
	set := upstreams.TokenSet{AccessToken: answer.AccessToken, RefreshToken: answer.RefreshToken, Scope: answer.Scope}
	if answer.ExpiresIn > 0 {
		set.ExpiresAt = time.Now().Add(time.Duration(answer.ExpiresIn) * time.Second)
	}
	return set, nil
}

// Revoke revokes a token; without a revocation endpoint it does nothing.
func (o *OAuth) Revoke(ctx context.Context, a upstreams.Auth, secret, token string) error {
	if a.RevocationEndpoint == "" {
		return nil
	}
	return o.post(ctx, a.RevocationEndpoint, a.ClientID, secret, url.Values{"token": {token}}, nil)
}

// post sends form to endpoint with HTTP Basic client authentication
// (RFC 6749 §2.3.1) and reads a JSON answer into v (nil: none needed).
func (o *OAuth) post(ctx context.Context, endpoint, clientID, secret string, form url.Values, v any) error {
	if secret == "" {
		form.Set("client_id", clientID) // a public client names itself
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	res, err := o.http.Do(req)
	if err != nil {
		return fault.Newf(fault.Unavailable, err, "%s: %v", endpoint, err)
	}
	defer res.Body.Close()
	body, err := o.http.ReadBody(res)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return fault.New(fault.Unavailable, "%s answered %d %s", endpoint, res.StatusCode, e.Error)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fault.New(fault.Unavailable, "%s answered no JSON", endpoint)
	}
	return nil
}
