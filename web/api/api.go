// Package api is Visor's admin JSON API under /api/v1: tenants, members,
// agents, agent settings and keys, plus whatever other areas contribute as
// Resources (OAuth clients, round tokens, audit, grants). Every route is an
// Operation, so the OpenAPI 3.1 document served at /api/v1/openapi.json is
// generated from the same table the router is, and cannot drift from it.
//
// Errors are fault codes mapped to HTTP in one place (errors.go) and
// rendered as {"error":{"code","message"}}.
package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
)

// Prefix is where the admin API lives.
const Prefix = "/api/v1"

// DocPath is the stable path of the OpenAPI document.
const DocPath = Prefix + "/openapi.json"

// Operation is one admin API route with what the OpenAPI document needs to
// describe it.
type Operation struct {
	Method  string // http.MethodGet, ...
	Path    string // echo path below Prefix, e.g. "/tenants/:tenant/agents"
	ID      string // OpenAPI operationId, unique
	Summary string
	// Description, when set, says more than the summary (filters, rules).
	Description string
	Tag         string
	// Needs is the action the caller must be allowed to take
	// (identity.Principal.Check, from the authority matrix). Every
	// operation declares one; Register refuses an operation without.
	Needs identity.Action
	// Request is a value of the JSON body type (nil: no body). Response is
	// a value of the success body type (nil: no body).
	Request, Response any
	// OptionalBody marks a Request body the operation also accepts absent.
	OptionalBody bool
	// ResponseType, when set, is the media type of a success body that is
	// not JSON (a download); several are separated by ", ".
	ResponseType string
	Status       int // success status; 200 when zero
	// Errors lists the error statuses beyond those every operation of its
	// shape has (see ErrorsOf): 409 when the change can conflict with the
	// current state, 429 when a limit applies.
	Errors []int
	// Query lists the query parameters the operation reads (filters, and
	// PageParams for lists), for the OpenAPI document.
	Query   []QueryParam
	Handler echo.HandlerFunc
}

// Resource is a group of operations another package contributes. Add it
// with API.Add before Register; its operations are authenticated,
// authorized by Access, and documented like the built-in ones.
type Resource interface {
	Operations() []Operation
}

// Deps are what the API needs.
type Deps struct {
	Identity *identity.Service
	// Authenticate resolves the tenant and principal of a request into its
	// context (auth.Resolver.AdminMiddleware in production).
	Authenticate echo.MiddlewareFunc
	// PlatformToken, when set, is the platform admin bearer token: it may
	// create and list tenants and act in any tenant as an operator. Only
	// its SHA-256 is kept.
	PlatformToken string
	// Audit records every operator action (each request to an operation
	// that changes state) next to the tool calls; nil records nothing.
	Audit audit.Recorder
	// BaseURL is the deployment's public URL, the document's server.
	BaseURL string
	Logger  *slog.Logger
}

// API is the admin API.
type API struct {
	ids       *identity.Service
	authn     echo.MiddlewareFunc
	platform  [32]byte
	hasPlat   bool
	log       *slog.Logger
	audit     audit.Recorder
	baseURL   string
	ops       []Operation
	resources []Resource
}

// New returns the API with its built-in resources.
func New(d Deps) *API {
	a := &API{ids: d.Identity, authn: d.Authenticate, log: d.Logger, audit: d.Audit, baseURL: d.BaseURL}
	if d.PlatformToken != "" {
		a.platform, a.hasPlat = sha256.Sum256([]byte(d.PlatformToken)), true
	}
	a.Add(tenants{a}, members{a}, agents{a}, keys{a})
	return a
}

// Add contributes resources; call it before Register.
func (a *API) Add(rs ...Resource) { a.resources = append(a.resources, rs...) }

// Operations returns every operation, built-in and contributed, in
// registration order.
func (a *API) Operations() []Operation {
	var ops []Operation
	for _, r := range a.resources {
		ops = append(ops, r.Operations()...)
	}
	return ops
}

// Register installs every operation and the OpenAPI document on e.
func (a *API) Register(e *echo.Echo) {
	a.ops = a.Operations()
	doc := a.Document()
	g := e.Group(Prefix)
	g.GET(strings.TrimPrefix(DocPath, Prefix), func(c echo.Context) error {
		return c.JSONBlob(http.StatusOK, doc)
	})
	for _, op := range a.ops {
		if !op.Needs.Known() || !op.Needs.AdminAPI() {
			panic(fmt.Sprintf("api: operation %s declares no admin API action in Needs (%q); pick one of identity.Actions", op.ID, op.Needs))
		}
		handler := op.Handler
		g.Add(op.Method, op.Path, func(c echo.Context) error {
			if a.ids != nil {
				c.Set(agentsKey, a.ids)
			}
			return handler(c)
		}, a.authenticate(), a.record(op), a.authorize(op.Needs))
	}
}

// isPlatform reports whether the request carries the platform admin token.
func (a *API) isPlatform(r *http.Request) bool {
	if !a.hasPlat {
		return false
	}
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(h[7:])))
	return subtle.ConstantTimeCompare(sum[:], a.platform[:]) == 1
}
