package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// The demo tenant `visor dev` keeps.
const (
	demoSlug  = "demo"
	demoName  = "Demo"
	demoOwner = "owner@demo.example.com"
	demoAgent = "assistant"
)

// devCredentials is what `visor dev` prints, writes with -json, and keeps
// in VISOR_DEV_DIR/credentials.json.
type devCredentials struct {
	BaseURL       string `json:"base_url"`
	MCPURL        string `json:"mcp_url"`
	DashboardURL  string `json:"dashboard_url"`
	Tenant        string `json:"tenant"`
	OwnerEmail    string `json:"owner_email"`
	OwnerPassword string `json:"owner_password"`
	OperatorKey   string `json:"operator_key"`
	Agent         string `json:"agent"`
	AgentKey      string `json:"agent_key"`
}

func credentialsPath(dir string) string { return filepath.Join(dir, "credentials.json") }

// seedDemo makes sure the demo tenant, owner, agent and keys exist and that
// the kept credentials work, replacing any that do not.
func seedDemo(ctx context.Context, a *app, base string) (devCredentials, error) {
	kept := loadCredentials(a.cfg.DevDir)
	t, err := a.ids.TenantBySlug(ctx, demoSlug)
	if fault.Is(err, fault.NotFound) {
		t, err = a.ids.CreateTenant(ctx, demoSlug, demoName)
	}
	if err != nil {
		return devCredentials{}, err
	}
	c := devCredentials{BaseURL: base, MCPURL: base + "/t/" + t.Slug + "/mcp", DashboardURL: base + "/t/" + t.Slug + "/login",
		Tenant: t.Slug, OwnerEmail: demoOwner, Agent: demoAgent}
	if c.OwnerPassword, err = ensureOwner(ctx, a.ids, t, kept.OwnerPassword); err != nil {
		return c, err
	}
	agent, err := ensureAgent(ctx, a.ids, t)
	if err != nil {
		return c, err
	}
	resolver := auth.NewResolver(a.stores.identity, a.stores.identity, auth.NewURLs(base), a.log)
	if c.OperatorKey, err = ensureKey(ctx, a.ids, resolver, t, identity.NewKey{Kind: identity.KeyOperator, Name: "visor dev operator"}, kept.OperatorKey); err != nil {
		return c, err
	}
	agentKey := identity.NewKey{Kind: identity.KeyAgent, AgentID: agent.ID, Name: "visor dev " + demoAgent,
		Scopes: []string{identity.ScopeToolsAdmin}}
	if c.AgentKey, err = ensureKey(ctx, a.ids, resolver, t, agentKey, kept.AgentKey); err != nil {
		return c, err
	}
	if err := os.MkdirAll(a.cfg.DevDir, 0o700); err != nil {
		return c, fmt.Errorf("VISOR_DEV_DIR: %w", err)
	}
	return c, writeJSONFile(credentialsPath(a.cfg.DevDir), c, 0o600)
}

func loadCredentials(dir string) devCredentials {
	var c devCredentials
	b, err := os.ReadFile(credentialsPath(dir))
	if err == nil {
		_ = json.Unmarshal(b, &c) // a damaged file just means fresh credentials
	} else if !errors.Is(err, fs.ErrNotExist) {
		return devCredentials{}
	}
	return c
}

// ensureOwner returns a working password for the demo owner: the kept one
// if it still signs in, otherwise a new one.
func ensureOwner(ctx context.Context, ids *identity.Service, t identity.Tenant, kept string) (string, error) {
	m, err := ids.MemberByEmail(ctx, t.ID, demoOwner)
	if fault.Is(err, fault.NotFound) {
		pw := randomSecret()
		_, err := ids.CreateMember(ctx, t.ID, demoOwner, pw, identity.RoleOwner)
		return pw, err
	}
	if err != nil {
		return "", err
	}
	if kept != "" {
		if _, err := ids.Authenticate(ctx, t.ID, demoOwner, kept); err == nil {
			return kept, nil
		}
	}
	pw := randomSecret()
	return pw, ids.SetMemberPassword(ctx, t.ID, m.ID, pw)
}

func ensureAgent(ctx context.Context, ids *identity.Service, t identity.Tenant) (identity.Agent, error) {
	ag, err := ids.AgentByName(ctx, t.ID, demoAgent)
	switch {
	case fault.Is(err, fault.NotFound):
		return ids.CreateAgent(ctx, t.ID, identity.NewAgent{Name: demoAgent, Department: "general", Role: "assistant"})
	case err != nil:
		return ag, err
	case ag.Status == identity.AgentTrashed:
		return ids.RestoreAgent(ctx, t.ID, ag.ID)
	}
	return ag, nil
}

// ensureKey returns kept when it still authenticates as the key in wants
// (kind and agent), and a newly created key's token otherwise.
func ensureKey(ctx context.Context, ids *identity.Service, r *auth.Resolver, t identity.Tenant, want identity.NewKey, kept string) (string, error) {
	if kept != "" {
		p, err := r.Resolve(ctx, t, kept)
		if err == nil && p.AgentID == want.AgentID && (p.Kind == identity.KindEmployee) == (want.Kind == identity.KeyAgent) {
			return kept, nil
		}
	}
	_, token, err := ids.CreateKey(ctx, t.ID, want)
	return token, err
}

func randomSecret() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
