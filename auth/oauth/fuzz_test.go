package oauth_test

import (
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/visorhq/visor/auth/oauth"
)

// FuzzParseClientMetadataDocument feeds untrusted documents to the CIMD
// parser: it must never panic, and whatever it accepts must be a public
// client named by the document's URL with only valid redirect URIs.
func FuzzParseClientMetadataDocument(f *testing.F) {
	const id = "https://client.example/meta.json"
	f.Add(id, []byte(`{"client_id":"https://client.example/meta.json","client_name":"C","redirect_uris":["https://c.example/cb"]}`))
	f.Add(id, []byte(`{"client_id":"https://client.example/meta.json","redirect_uris":["http://127.0.0.1:33418/cb"],"grant_types":["authorization_code","refresh_token"],"scope":"tools:read"}`))
	f.Add(id, []byte(`{"client_id":"https://client.example/meta.json","redirect_uris":["javascript:alert(1)"]}`))
	f.Add(id, []byte(`{"client_id":"https://client.example/meta.json","redirect_uris":["https://c.example/cb"],"client_secret":"x"}`))
	f.Add(id, []byte(`{"client_id":1}`))
	f.Add(id, []byte(`[]`))
	f.Add(id, []byte(`null`))
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		c, err := oauth.ParseClientMetadataDocument(id, body)
		if err != nil {
			return
		}
		if c.ID != id || !c.Public() || len(c.RedirectURIs) == 0 {
			t.Fatalf("accepted a bad client: %+v", c)
		}
		for _, r := range c.RedirectURIs {
			if oauth.ValidRedirectURI(r) != nil {
				t.Fatalf("accepted redirect URI %q", r)
			}
		}
	})
}

// FuzzValidRedirectURI checks that every accepted redirect URI is https,
// or http on a loopback host, with no fragment or user info.
func FuzzValidRedirectURI(f *testing.F) {
	for _, s := range []string{"https://c.example/cb", "http://127.0.0.1:8080/cb", "http://[::1]/cb", "http://localhost/cb",
		"http://evil.example/cb", "https://u:p@c.example/", "https://c.example/#f", "custom:/cb", "https://", "http://127.0.0.1.evil.example/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if oauth.ValidRedirectURI(s) != nil {
			return
		}
		u, err := url.Parse(s)
		if err != nil || u.User != nil || u.Fragment != "" || strings.Contains(s, "#") || u.Host == "" {
			t.Fatalf("accepted %q", s)
		}
		h := u.Hostname()
		ip := net.ParseIP(h)
		if u.Scheme != "https" && !(u.Scheme == "http" && (h == "localhost" || (ip != nil && ip.IsLoopback()))) {
			t.Fatalf("accepted %q", s)
		}
	})
}
