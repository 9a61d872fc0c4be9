package workspace_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	dws "github.com/visorhq/visor/docker/workspace"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/tools"
	domain "github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/services/workspace/workspacetest"
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
	k, err := secrets.NewKey("k1")
	require.NoError(t, err)
	keys, err := secrets.ParseKeyring(k)
	require.NoError(t, err)
	m := e.managerB(t, "ws-test-"+uuid.NewString()[:8], func(c *dws.Config) { c.Keys = keys })
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
	workspacetest.NoGenericOK(t, m)
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
	res, m, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "env_list", "name": "deploy-app"})
	require.NoError(t, err)
	require.Equal(t, []any{map[string]any{"name": "DEPLOY_TOKEN", "set": true}}, m["variables"], "env_list names the variable and says it is set")
	require.NotContains(t, res.Text, secret, "never its value")

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

// TestSkillFlow: install stores a workspace folder as the Skill's new
// active version without running anything in it; read_file
// skill://name/SKILL.md reads the active version; rollback and activate
// move between versions; can_modify_own_skills=false refuses install,
// activate, rollback and env_set, though validate and env_list stay open.
func TestSkillFlow(t *testing.T) {
	e := newToolEnv(t)
	run := "#!/bin/sh\ntouch /workspace/RAN\n"
	e.write(t, "skills/deploy-app/SKILL.md", skillMD)
	e.write(t, "skills/deploy-app/run.sh", run)
	e.sh(t, "chmod +x skills/deploy-app/run.sh")

	_, m, err := e.call(t, e.ada, "skill_package", map[string]any{"action": "install", "path": "skills/deploy-app"})
	require.NoError(t, err)
	require.Equal(t, true, m["installed"])
	sk := m["skill"].(map[string]any)
	require.Equal(t, "deploy-app", sk["name"])
	require.EqualValues(t, 1, sk["version"])
	m = e.sh(t, "test -e RAN && echo ran || echo not-run")
	require.Equal(t, "not-run\n", m["output"], "installing never runs the Skill")

	_, m, err = e.call(t, e.ada, "read_file", map[string]any{"path": "skill://deploy-app/SKILL.md"})
	require.NoError(t, err)
	require.Equal(t, skillMD, m["content"])
	_, m, err = e.call(t, e.ada, "read_file", map[string]any{"path": "skill://deploy-app/run.sh"})
	require.NoError(t, err)
	require.Equal(t, run, m["content"])

	// Version 2 changes the document; it becomes the active one.
	v2 := "---\nname: deploy-app\ndescription: Ship the app, v2.\n---\n# Deploy v2\n"
	e.write(t, "skills/deploy-app/SKILL.md", v2)
	_, m, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "install", "path": "skills/deploy-app"})
	require.NoError(t, err)
	require.EqualValues(t, 2, m["skill"].(map[string]any)["version"])
	_, m, err = e.call(t, e.ada, "read_file", map[string]any{"path": "skill://deploy-app/SKILL.md"})
	require.NoError(t, err)
	require.Equal(t, v2, m["content"])
	_, m, err = e.call(t, e.ada, "visor_context", map[string]any{})
	require.NoError(t, err)
	require.Equal(t, []any{map[string]any{"name": "deploy-app", "version": float64(2), "description": "Ship the app, v2.", "read": "skill://deploy-app/SKILL.md"}}, m["skills"])

	_, m, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "rollback", "name": "deploy-app"})
	require.NoError(t, err)
	require.EqualValues(t, 1, m["active_version"])
	require.EqualValues(t, 2, m["previous_version"])
	require.Equal(t, true, m["changed"])
	_, m, err = e.call(t, e.ada, "read_file", map[string]any{"path": "skill://deploy-app/SKILL.md"})
	require.NoError(t, err)
	require.Equal(t, skillMD, m["content"], "rollback restores version 1's document")
	_, _, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "rollback", "name": "deploy-app"})
	require.True(t, fault.Is(err, fault.Conflict), "nothing before version 1: %v", err)
	_, m, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "activate", "name": "deploy-app", "version": 2})
	require.NoError(t, err)
	require.EqualValues(t, 2, m["active_version"])
	_, _, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "activate", "name": "deploy-app", "version": 7})
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)

	// A folder without SKILL.md is not installed.
	e.write(t, "skills/broken/README.md", "x\n")
	_, _, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "install", "path": "skills/broken"})
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	require.Contains(t, err.Error(), "no SKILL.md")

	// can_modify_own_skills = false.
	no := false
	e.ada.Agent.Settings.Permissions = &identity.Permissions{CanModifyOwnSkills: &no}
	for _, args := range []map[string]any{
		{"action": "install", "path": "skills/deploy-app"},
		{"action": "activate", "name": "deploy-app", "version": 1},
		{"action": "rollback", "name": "deploy-app"},
		{"action": "env_set", "name": "deploy-app", "env_name": "X_KEY", "env_value": "value"},
	} {
		_, _, err = e.call(t, e.ada, "skill_package", args)
		var r *refused
		require.ErrorAs(t, err, &r, "%v", args)
		require.Equal(t, tools.EventPermissionDenied, r.d.Event)
		require.Contains(t, r.d.Reason, "can_modify_own_skills is false")
	}
	_, m, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "validate", "path": "skills/deploy-app"})
	require.NoError(t, err)
	require.Equal(t, true, m["valid"])
	_, _, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "env_list", "name": "deploy-app"})
	require.NoError(t, err)
	_, m, err = e.call(t, e.ada, "read_file", map[string]any{"path": "skill://deploy-app/SKILL.md"})
	require.NoError(t, err)
	require.Equal(t, v2, m["content"], "the refused calls changed nothing")
	m = e.sh(t, "test -e RAN && echo ran || echo not-run")
	require.Equal(t, "not-run\n", m["output"])
}

// putBytes writes b to path in the workspace (base64 through commands).
func (e *toolEnv) putBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	enc := base64.StdEncoding.EncodeToString(b)
	e.sh(t, "mkdir -p \"$(dirname "+path+")\" && rm -f "+path+".b64")
	for len(enc) > 0 {
		n := min(len(enc), 12<<10)
		e.sh(t, "printf %s '"+enc[:n]+"' >> "+path+".b64")
		enc = enc[n:]
	}
	e.sh(t, "base64 -d "+path+".b64 > "+path+" && rm "+path+".b64")
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// TestViewImageFromTheWorkspace: a PNG written into the workspace comes
// back as an MCP image: a large opaque one scaled to max_dimension and
// converted to JPEG within the reply limit, a small transparent one kept
// as PNG at its size; a file that is no image and a path out of the
// workspace are refused.
func TestViewImageFromTheWorkspace(t *testing.T) {
	e := newToolEnv(t)
	big := image.NewNRGBA(image.Rect(0, 0, 3000, 1200))
	for y := 0; y < 1200; y++ {
		for x := 0; x < 3000; x++ {
			c := color.NRGBA{R: 220, G: 30, B: 30, A: 255} // left half red
			if x >= 1500 {
				c = color.NRGBA{R: 30, G: 30, B: 220, A: 255} // right half blue
			}
			big.SetNRGBA(x, y, c)
		}
	}
	e.putBytes(t, "pics/big.png", encodePNG(t, big))

	res, m, err := e.call(t, e.ada, "view_image", map[string]any{"path": "pics/big.png"})
	require.NoError(t, err)
	require.Len(t, res.Images, 1)
	require.Equal(t, "image/jpeg", res.Images[0].MIMEType, "an opaque picture is sent as JPEG")
	require.LessOrEqual(t, len(res.Images[0].Data), domain.MaxImageReply)
	got, format, err := image.Decode(bytes.NewReader(res.Images[0].Data))
	require.NoError(t, err)
	require.Equal(t, "jpeg", format)
	require.Equal(t, image.Rect(0, 0, domain.DefaultImageDimension, 1200*domain.DefaultImageDimension/3000), got.Bounds())
	r, _, b, _ := got.At(100, 100).RGBA()
	require.Greater(t, r>>8, uint32(180), "the left stays red")
	require.Less(t, b>>8, uint32(80))
	r, _, b, _ = got.At(got.Bounds().Dx()-100, 100).RGBA()
	require.Less(t, r>>8, uint32(80), "the right stays blue")
	require.Greater(t, b>>8, uint32(180))
	require.Equal(t, "workspace", m["source"])
	require.Equal(t, true, m["resized"])
	require.EqualValues(t, 3000, m["original_width"])
	require.EqualValues(t, 1200, m["original_height"])
	require.EqualValues(t, domain.DefaultImageDimension, m["width"])
	require.NotContains(t, res.Text, "base64")

	_, m, err = e.call(t, e.ada, "view_image", map[string]any{"path": "pics/big.png", "max_dimension": 100})
	require.NoError(t, err)
	require.EqualValues(t, 100, m["width"])
	require.EqualValues(t, 40, m["height"])
	_, _, err = e.call(t, e.ada, "view_image", map[string]any{"path": "pics/big.png", "max_dimension": 5000})
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)

	small := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	small.SetNRGBA(3, 4, color.NRGBA{G: 255, A: 128})
	e.putBytes(t, "pics/small.png", encodePNG(t, small))
	res, m, err = e.call(t, e.ada, "view_image", map[string]any{"path": "pics/small.png"})
	require.NoError(t, err)
	require.Equal(t, "image/png", res.Images[0].MIMEType, "transparency keeps PNG")
	require.Equal(t, false, m["resized"])
	got, err = png.Decode(bytes.NewReader(res.Images[0].Data))
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 40, 30), got.Bounds())
	require.Equal(t, color.NRGBA{G: 255, A: 128}, color.NRGBAModel.Convert(got.At(3, 4)))

	e.write(t, "notes.txt", "not a picture\n")
	_, _, err = e.call(t, e.ada, "view_image", map[string]any{"path": "notes.txt"})
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	_, _, err = e.call(t, e.ada, "view_image", map[string]any{"path": "../etc/passwd"})
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	_, _, err = e.call(t, e.ada, "view_image", map[string]any{"path": "pics/missing.png"})
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
}
