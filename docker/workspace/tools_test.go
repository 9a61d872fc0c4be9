package workspace_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	dws "github.com/visorhq/visor/docker/workspace"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/tools"
	domain "github.com/visorhq/visor/services/workspace"
)

// localRunner hands the service's ops straight to a Manager, as a
// worker's plane handler does (without Redis between them).
type localRunner struct{ m *dws.Manager }

func (r localRunner) Run(ctx context.Context, _ domain.Workspace, ref domain.Ref, op domain.Op) (domain.Answer, error) {
	return r.m.Do(ctx, ref, op, true)
}

func (r localRunner) Held(ctx context.Context, _ domain.Workspace, ref domain.Ref, op domain.Op) (domain.Answer, error) {
	return r.m.Do(ctx, ref, op, false)
}

// toolEnv is the workspace tool family over a real container.
type toolEnv struct {
	*env
	reg *tools.Registry
	ada *tools.Subject
}

func newToolEnv(t *testing.T, opts ...func(*domain.Config)) *toolEnv {
	t.Helper()
	e := setup(t)
	m := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	k, err := secrets.NewKey("k1")
	require.NoError(t, err)
	keys, err := secrets.ParseKeyring(k)
	require.NoError(t, err)
	cfg := domain.Config{Store: e.store, Tasks: e.store, Skills: e.store, Artifacts: e.store, Keys: keys, Runner: localRunner{m}, Image: e.image}
	for _, o := range opts {
		o(&cfg)
	}
	reg := tools.NewRegistry()
	domain.NewService(cfg).Register(reg)
	ag := e.agent
	ag.Settings.Capabilities.Workspace = true
	sub := &tools.Subject{Tenant: e.tenant, Agent: &ag, Principal: identity.Principal{TenantID: e.tenant.ID, TenantSlug: e.tenant.Slug, Kind: identity.KindEmployee, AgentID: ag.ID,
		Scopes: []string{identity.ScopeToolsRead, identity.ScopeToolsWrite}}}
	return &toolEnv{env: e, reg: reg, ada: sub}
}

// call runs a tool as sub (policy first, as the call pipeline does) and
// returns its result and structured content.
func (e *toolEnv) call(t *testing.T, sub *tools.Subject, name string, args map[string]any) (*tools.Result, map[string]any, error) {
	t.Helper()
	tool, ok := e.reg.Get(name)
	require.True(t, ok, name)
	if d := e.reg.Decide(sub, tool, args); !d.Allowed {
		return nil, nil, &refused{d}
	}
	raw, _ := json.Marshal(args)
	res, err := tool.Handler(context.Background(), tools.Call{Subject: sub, Name: name, Raw: raw})
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	b, _ := json.Marshal(res.Structured)
	require.NoError(t, json.Unmarshal(b, &m))
	require.NotContains(t, m, "ok", "no generic ok in structured content")
	return res, m, nil
}

type refused struct{ d tools.Decision }

func (r *refused) Error() string { return r.d.Reason }

func (e *toolEnv) sh(t *testing.T, cmd string) map[string]any {
	t.Helper()
	_, m, err := e.call(t, e.ada, "exec_command", map[string]any{"cmd": cmd, "wait_ms": 10000})
	require.NoError(t, err)
	require.Equal(t, true, m["command_ok"], "%s: %v", cmd, m["output"])
	return m
}

// write puts content at path in the workspace with a shell command.
func (e *toolEnv) write(t *testing.T, path, content string) {
	t.Helper()
	e.sh(t, "mkdir -p \"$(dirname "+path+")\" && cat > "+path+" <<'VISOR_EOF'\n"+content+"VISOR_EOF\n")
}

const skillMD = "---\nname: deploy-app\ndescription: Ship the app.\n---\n# Deploy\nRun run.sh.\n"

// TestSkillEnvIsRedactedFromOutput: a value set with skill_package
// env_set reaches the Skill's command as its variable, and is replaced by
// its name in exec_command output and command line, in session_observe
// output of a command that outlives wait_ms, and in another command that
// prints it without the Skill.
func TestSkillEnvIsRedactedFromOutput(t *testing.T) {
	e := newToolEnv(t)
	const secret = "tok-3f9a1c77e2"
	e.write(t, "skills/deploy-app/SKILL.md", skillMD)
	_, _, err := e.call(t, e.ada, "skill_package", map[string]any{"action": "install", "path": "skills/deploy-app"})
	require.NoError(t, err)
	res, m, err := e.call(t, e.ada, "skill_package", map[string]any{"action": "env_set", "name": "deploy-app", "env_name": "DEPLOY_TOKEN", "env_value": secret})
	require.NoError(t, err)
	require.Equal(t, true, m["encrypted"])
	require.NotContains(t, res.Text, secret)

	res, m, err = e.call(t, e.ada, "exec_command", map[string]any{"cmd": `echo "token=$DEPLOY_TOKEN"; test "$DEPLOY_TOKEN" = ` + secret + ` && echo same`, "skill": "deploy-app", "wait_ms": 10000})
	require.NoError(t, err)
	require.Equal(t, true, m["command_ok"], "the Skill's command sees the real value: %v", m["output"])
	require.Equal(t, "token=[redacted:DEPLOY_TOKEN]\nsame\n", m["output"])
	require.NotContains(t, m["cmd"], secret, "the command line is redacted too")
	require.NotContains(t, res.Text, secret)

	// Printed by a command that does not name the Skill.
	m = e.sh(t, "echo "+secret+" > leak.txt && cat leak.txt")
	require.Equal(t, "[redacted:DEPLOY_TOKEN]\n", m["output"])

	// A running session, followed with session_observe.
	_, m, err = e.call(t, e.ada, "exec_command", map[string]any{"cmd": `sleep 1; echo "late $DEPLOY_TOKEN"`, "skill": "deploy-app", "wait_ms": 100})
	require.NoError(t, err)
	require.Equal(t, "running", m["status"])
	id := m["session_id"].(string)
	out := ""
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		res, m, err = e.call(t, e.ada, "session_observe", map[string]any{"action": "status", "session_id": id, "wait_ms": 5000})
		require.NoError(t, err)
		require.NotContains(t, res.Text, secret)
		out = m["output"].(string)
		if m["status"] != "running" {
			break
		}
	}
	require.Equal(t, "late [redacted:DEPLOY_TOKEN]\n", out)
	_, m, err = e.call(t, e.ada, "session_observe", map[string]any{"action": "list"})
	require.NoError(t, err)
	b, _ := json.Marshal(m)
	require.NotContains(t, string(b), secret)

	// Unset, the value is no longer a secret Visor knows.
	_, _, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "env_unset", "name": "deploy-app", "env_name": "DEPLOY_TOKEN"})
	require.NoError(t, err)
	m = e.sh(t, "cat leak.txt")
	require.Equal(t, secret+"\n", m["output"])
}
