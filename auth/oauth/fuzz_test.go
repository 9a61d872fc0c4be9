package oauth_test

import (
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/validtext"
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
	f.Add(id, []byte(`{"client_id":"https://client.example/meta.json","client_name":"C\u0000","redirect_uris":["https://c.example/cb"]}`))
	f.Add(id, []byte(`{"client_id":1}`))
	f.Add(id, []byte(`[]`))
	f.Add(id, []byte(`null`))
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		c, err := oauth.ParseClientMetadataDocument(id, body)
		if err != nil {
			return
		}
		if validtext.String(c.Name) != nil || validtext.String(c.ClientURI) != nil {
			t.Fatalf("accepted text Postgres refuses: %+v", c)
		}
		if c.ID != id || !c.Public() || len(c.RedirectURIs) == 0 {
			t.Fatalf("accepted a bad client: %+v", c)
		}
		for _, r := range c.RedirectURIs {
			if oauth.ValidRedirectURI(r, true) != nil {
				t.Fatalf("accepted redirect URI %q", r)
			}
		}
	})
}

// FuzzValidRedirectURI checks that every accepted redirect URI is https,
// http on a loopback host, or (for a public client) a private-use scheme
// that is neither a refused one nor an http lookalike, always without
// fragment or user info; and that a confidential client gets no
// private-use scheme.
func FuzzValidRedirectURI(f *testing.F) {
	for _, s := range []string{"https://c.example/cb", "http://127.0.0.1:8080/cb", "http://[::1]/cb", "http://localhost/cb",
		"http://evil.example/cb", "https://u:p@c.example/", "https://c.example/#f", "custom:/cb", "https://", "http://127.0.0.1.evil.example/",
		"cursor://anysphere.cursor-mcp/oauth/callback", "com.example.app:/oauth2redirect", "javascript:alert(1)", "https.evil:/x",
		"data:text/html,x", "File:///etc/passwd", "vscode://u:p@x/cb"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, public bool) {
		if oauth.ValidRedirectURI(s, public) != nil {
			return
		}
		u, err := url.Parse(s)
		if err != nil || u.User != nil || u.Fragment != "" || strings.Contains(s, "#") {
			t.Fatalf("accepted %q", s)
		}
		h := u.Hostname()
		ip := net.ParseIP(h)
		switch {
		case u.Scheme == "https" && h != "":
		case u.Scheme == "http" && (h == "localhost" || (ip != nil && ip.IsLoopback())):
		case !public:
			t.Fatalf("a confidential client got %q", s)
		case strings.HasPrefix(u.Scheme, "http") || u.Scheme == "javascript" || u.Scheme == "data" || u.Scheme == "file":
			t.Fatalf("accepted %q", s)
		case !strings.HasPrefix(s, u.Scheme+":"):
			t.Fatalf("accepted a scheme that is not lower case: %q", s)
		}
	})
}
