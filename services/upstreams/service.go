package upstreams

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/secrets"
)

// Store keeps a tenant's servers, their secrets, tools and tokens. Every
// method names its tenant; another tenant's server is NotFound.
type Store interface {
	// Create inserts s. Errors: Conflict for a name the tenant already
	// uses, or when the tenant holds max servers already.
	Create(ctx context.Context, s *Server, max int) error
	Server(ctx context.Context, tenantID, id uuid.UUID) (Server, error)
	ServerByName(ctx context.Context, tenantID uuid.UUID, name string) (Server, error)
	// List returns the tenant's servers by name, each with its tool count
	// and secret names.
	List(ctx context.Context, tenantID uuid.UUID) ([]Server, error)
	// Update applies fn under a row lock, bumps the version and saves.
	Update(ctx context.Context, tenantID, id uuid.UUID, fn func(*Server) error) (Server, error)
	// Delete removes the server with its secrets, tools and tokens, and
	// returns it with the tokens it held.
	Delete(ctx context.Context, tenantID, id uuid.UUID) (Server, []Token, error)
	// SetSecret saves one sealed secret (at most max per server) and
	// bumps the server's version.
	SetSecret(ctx context.Context, tenantID, serverID uuid.UUID, sec Secret, max int) error
	// DeleteSecret removes one secret and bumps the version; NotFound when
	// there is none.
	DeleteSecret(ctx context.Context, tenantID, serverID uuid.UUID, kind SecretKind, name string) error
	// Secrets returns a server's sealed secrets.
	Secrets(ctx context.Context, tenantID, serverID uuid.UUID) ([]Secret, error)
	// SaveTools replaces the tools of the server's version (a refresh of
	// an older version is dropped) and records refreshErr ("" for none).
	SaveTools(ctx context.Context, tenantID, serverID uuid.UUID, version int64, tools []Tool, refreshErr string) error
	// Catalog returns the summaries (no schemas) of the tools of the
	// tenant's enabled servers, of the one named server when server is
	// not "".
	Catalog(ctx context.Context, tenantID uuid.UUID, server string) ([]Tool, error)
	// Tool returns one tool with its schemas, with its server.
	Tool(ctx context.Context, tenantID uuid.UUID, server, tool string) (Server, Tool, error)
	// Token returns the token held for member (uuid.Nil: the tenant's).
	Token(ctx context.Context, tenantID, serverID, memberID uuid.UUID) (Token, error)
	// SaveToken inserts or replaces a token.
	SaveToken(ctx context.Context, t Token) error
	// DeleteToken removes a token; NotFound when there is none.
	DeleteToken(ctx context.Context, tenantID, serverID, memberID uuid.UUID) error
	// SaveState stores a pending Connect. Conflict when the member holds
	// too many pending.
	SaveState(ctx context.Context, s State) error
	// TakeState removes and returns the pending Connect with stateHash
	// begun by member in the session sessionHash, unexpired; NotFound
	// otherwise (a state is taken once).
	TakeState(ctx context.Context, tenantID uuid.UUID, stateHash string, memberID uuid.UUID, sessionHash string) (State, error)
	secrets.Holder
}

// Connector opens sessions with servers of one or more transports.
type Connector interface {
	// Connect opens and initializes a session with t. Errors from an
	// unreachable or refusing server are fault.Unavailable, from a refused
	// destination fault.Forbidden.
	Connect(ctx context.Context, t Target) (Session, error)
}

// Session is an initialized MCP session with one server.
type Session interface {
	// Tools lists every tool, following pages, at most max.
	Tools(ctx context.Context, max int) ([]Tool, error)
	// Call calls one tool with its arguments (a JSON object).
	Call(ctx context.Context, name string, args json.RawMessage) (Result, error)
	// Close ends the session. It is safe to call twice.
	Close() error
}

// Target is everything a Connector needs to reach one server: built by
// the service, with secrets opened.
type Target struct {
	// Key identifies the server's tenant, id and version.
	Key    string
	Server Server
	// Member is whose OAuth token the session carries: uuid.Nil for the
	// tenant's (or none), a member's for a server with a token per member.
	Member uuid.UUID
	// Headers go with every HTTP request to a remote server; Env is a
	// stdio server's environment.
	Headers map[string]string
	Env     map[string]string
	// Token, when set, returns the bearer token to send (an OAuth
	// token Visor holds), refreshing it when needed.
	Token func(ctx context.Context) (string, error)
	// ToolsChanged is called when the server says its tools changed.
	ToolsChanged func()
}

// Config builds a Service.
type Config struct {
	Store Store
	// Keys seal secrets; nil when none is configured (a server can then
	// have no secret).
	Keys *secrets.Keyring
	// Connectors by transport; a transport without one is unavailable.
	Connectors map[Transport]Connector
	Publisher  changes.Publisher
	Log        *slog.Logger
	// CheckURL is the outbound guard's save-time check of a remote URL.
	CheckURL func(raw string) (string, error)
	// ServerName returns the name the tenant's clients give Visor, which
	// no upstream may take.
	ServerName func(ctx context.Context, tenantID uuid.UUID) (string, error)
	// StdioImages returns the tenant's allow list of stdio images
	// (settings.mcp_stdio_images); nil allows none. A stdio server's image
	// must be on it when saved and at every call, and on the stdio
	// worker's own list, which the worker enforces.
	StdioImages func(ctx context.Context, tenantID uuid.UUID) ([]string, error)
	// IdleTimeout closes a kept session unused this long (default 5 min).
	IdleTimeout time.Duration
}

// Service is the only writer of the registry and the runner of the four
// entry points.
type Service struct {
	lifecycle.Base
	cfg    Config
	pool   *pool
	guards *guards
	// ctx is the service's context once started (refreshes a server asks
	// for run in it); nil before Start.
	ctx   atomic.Pointer[context.Context]
	oauth OAuthClient // nil: servers that need OAuth are unreachable
	// refreshing holds the ids of servers whose list_changed refresh runs.
	refreshing sync.Map
	// tokenLocks holds a mutex per server and member (poolKey): one token
	// refresh at a time.
	tokenLocks sync.Map
}

// NewService returns a Service; Start it to reap idle sessions and run
// refreshes a server asks for.
func NewService(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Publisher == nil {
		cfg.Publisher = changes.Discard{}
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	return &Service{cfg: cfg, pool: newPool(), guards: newGuards()}
}

// Start reaps idle sessions until Stop.
func (s *Service) Start(ctx context.Context) error {
	rctx, err := s.Begin(ctx)
	if err != nil {
		return err
	}
	s.ctx.Store(&rctx)
	s.Go(func() {
		ctx := rctx
		t := time.NewTicker(min(s.cfg.IdleTimeout/2, 30*time.Second))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				s.pool.closeAll()
				return
			case <-t.C:
				s.pool.reap(s.cfg.IdleTimeout)
			}
		}
	})
	return nil
}

// Stop closes every kept session.
func (s *Service) Stop() {
	s.Base.Stop()
	s.pool.closeAll()
}

// sealContext binds a sealed value to its server and name.
func sealContext(tenantID, serverID uuid.UUID, what string) string {
	return "mcp_server:" + tenantID.String() + ":" + serverID.String() + ":" + what
}
