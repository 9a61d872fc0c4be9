package mcp

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
)

// CORS lets browser-based MCP clients call the endpoint from the origins
// originAllowed accepts: the endpoint's own host (ports aside) and
// Options.AllowedOrigins. The same rule refuses DNS-rebinding requests, so
// a page that may not call the endpoint cannot read its answers either.
// Credentials are bearer tokens the page holds itself, never cookies, so
// no Access-Control-Allow-Credentials is sent.

// exposedHeaders are the response headers a page may read: the session id
// of the session eras, the challenge of a 401 or 403 (where the OAuth
// discovery starts) and the negotiated protocol version.
const exposedHeaders = "Mcp-Session-Id, WWW-Authenticate, Mcp-Protocol-Version"

// allowedHeaders are the request headers every MCP era sends; a preflight
// asking for others (tracing headers, say) gets those too, when they are
// well-formed header names.
const allowedHeaders = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID"

var headerList = regexp.MustCompile(`^[A-Za-z0-9-]+(\s*,\s*[A-Za-z0-9-]+){0,31}$`)

// corsHeaders adds the CORS response headers for an allowed Origin. It runs
// before the credential is resolved, so a 401's challenge is readable too.
func (h *Handler) corsHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if o := c.Request().Header.Get("Origin"); o != "" && h.originAllowed(c.Request()) {
			hd := c.Response().Header()
			hd.Set("Access-Control-Allow-Origin", o)
			hd.Set("Access-Control-Expose-Headers", exposedHeaders)
		}
		c.Response().Header().Add("Vary", "Origin")
		return next(c)
	}
}

// preflight answers a CORS preflight: 204 with what the page may send for
// an allowed Origin, 403 for any other.
func (h *Handler) preflight(c echo.Context) error {
	req := c.Request()
	hd := c.Response().Header()
	hd.Add("Vary", "Origin")
	if req.Header.Get("Origin") == "" || !h.originAllowed(req) {
		return c.String(http.StatusForbidden, "Forbidden: Origin not allowed")
	}
	hd.Set("Access-Control-Allow-Origin", req.Header.Get("Origin"))
	hd.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	headers := allowedHeaders
	if asked := strings.TrimSpace(req.Header.Get("Access-Control-Request-Headers")); asked != "" && headerList.MatchString(asked) {
		headers += ", " + asked
	}
	hd.Set("Access-Control-Allow-Headers", headers)
	hd.Set("Access-Control-Max-Age", "600")
	return c.NoContent(http.StatusNoContent)
}
