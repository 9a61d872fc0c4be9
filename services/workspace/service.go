package workspace

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/tools"
)

// Config holds a Service's dependencies.
type Config struct {
	Store     Store
	Tasks     TaskStore
	Skills    SkillStore
	Artifacts ArtifactStore
	// Runner reaches the worker that holds a workspace; nil answers the
	// file and command tools as unavailable.
	Runner Runner
	// Keys seal Skill environment values; nil refuses env_set.
	Keys *secrets.Keyring
	// Quota is a new workspace's quota (0: DefaultQuota).
	Quota int64
	// Images fetches view_image URLs through the outbound guard; nil
	// refuses URLs.
	Images URLFetcher
	// ArtifactURL is the download address of a link token in a tenant
	// ("https://host/t/acme/artifacts/<token>"); nil: no link is made.
	ArtifactURL func(tenantSlug, token string) string
	// Upstreams lists the upstream MCP servers a caller may use, for the
	// context tool; nil lists none.
	Upstreams UpstreamLister
	// Image names the workspace image (context tool).
	Image string
	Log   *slog.Logger
	Now   func() time.Time
}

// Service runs the workspace tools and the operator's workspace view.
type Service struct{ cfg Config }

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Quota <= 0 {
		cfg.Quota = DefaultQuota
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// SetArtifactURL sets how download links are spelt, once the edge knows
// its base URL.
func (s *Service) SetArtifactURL(f func(tenantSlug, token string) string) { s.cfg.ArtifactURL = f }

// errNotEmployee is a caller that is no AI employee: workspaces belong to
// employees (the tools are listed only to them).
var errNotEmployee = fault.New(fault.Forbidden, "workspace tools act for an AI employee; this credential is not one")

// target returns the caller's workspace and its Ref.
func (s *Service) target(ctx context.Context, sub *tools.Subject) (Workspace, Ref, error) {
	p := sub.Principal
	if p.Kind != identity.KindEmployee || sub.Agent == nil {
		return Workspace{}, Ref{}, errNotEmployee
	}
	ws, err := s.cfg.Store.Ensure(ctx, p.TenantID, p.AgentID, s.cfg.Quota)
	if err != nil {
		return Workspace{}, Ref{}, err
	}
	ref := Ref{Tenant: p.TenantID, Agent: p.AgentID, ID: ws.ID, Quota: ws.Quota,
		AllowedHosts: sub.Agent.Settings.Capabilities.WorkspaceConfig.AllowedHosts}
	return ws, ref, nil
}

// run sends op to the caller's workspace.
func (s *Service) run(ctx context.Context, sub *tools.Subject, op Op) (Answer, error) {
	ws, ref, err := s.target(ctx, sub)
	if err != nil {
		return Answer{}, err
	}
	if s.cfg.Runner == nil {
		return Answer{}, fault.New(fault.Unavailable, "workspace workers are not configured in this deployment")
	}
	a, err := s.cfg.Runner.Run(ctx, ws, ref, op)
	if err == nil {
		if terr := s.cfg.Store.Touch(ctx, ref.Tenant, ref.ID); terr != nil {
			s.cfg.Log.Warn("record a workspace's use", "workspace", ref.ID, "err", terr)
		}
	}
	return a, err
}

// redactor replaces the values of the employee's Skill environment
// variables in command output with their names (the worker has replaced
// them already; this holds for answers of a worker without the keys).
func (s *Service) redactor(ctx context.Context, p identity.Principal) (*strings.Replacer, error) {
	return Redactor(ctx, s.cfg.Skills, s.cfg.Keys, p.TenantID, p.AgentID)
}

// UpstreamServer is one upstream MCP server a caller may use, as the
// context tool shows it.
type UpstreamServer struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Tools       int    `json:"tools"`
}

// UpstreamLister lists the upstream MCP servers sub may call (through
// the mcp_tool_* entry points). The upstream family implements it.
type UpstreamLister interface {
	UpstreamsFor(ctx context.Context, sub *tools.Subject) ([]UpstreamServer, error)
}
