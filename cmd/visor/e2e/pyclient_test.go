package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// pyResult is what testdata/pyclient/client.py prints for one credential.
type pyResult struct {
	Server     string   `json:"server"`
	Tools      []string `json:"tools"`
	ToolsAfter int      `json:"toolsAfter"`
	Calls      map[string]struct {
		IsError    bool   `json:"isError"`
		Text       string `json:"text"`
		Structured struct {
			Refusal struct {
				Code    int
				Event   string
				Message string
			}
		} `json:"structured"`
		Error *struct {
			Code    int
			Message string
		} `json:"error"`
	} `json:"calls"`
}

// TestPythonSDKClient runs a client built on the official MCP Python SDK
// (mcp.client.streamable_http with ClientSession, Debian's python3-mcp) in
// a container on the host network against a real `visor serve`: with an
// agent's API key it initializes, lists the tools and calls one; with a
// key whose agent may not create agents it calls create_agent, which is
// listed but refused per call, and gets an isError result carrying the
// gate's message and the -32003 refusal; with an OAuth access token the
// harness obtained through the real authorization flow it lists the same
// tools the server shows that token.
func TestPythonSDKClient(t *testing.T) {
	t.Parallel()
	image := pythonClientImage(t)
	w := newWorld(t)
	no := false
	eph := w.agent(t, w.acme, "eph", identity.AgentSettings{Permissions: &identity.Permissions{CanCreateAgents: &no}})
	ephKey := w.key(t, w.acme, identity.NewKey{Kind: identity.KeyAgent, AgentID: eph.ID, Name: "eph"})
	_, err := w.ids.CreateMember(context.Background(), w.acme.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	r := startReplica(t, "A", w.dbURL, privateRedis(t).URL())
	base := r.base + "/t/acme"
	redirect := "http://127.0.0.1:7779/callback"
	cid := oauthRegister(t, base+"/oauth/register", redirect)
	tok := oauthAuthorize(t, r, base+"/oauth/authorize", base+"/oauth/token", cid, redirect, base+"/mcp", "E2E")

	specs, _ := json.Marshal([]map[string]any{
		{"label": "key", "token": w.adaKey, "calls": []map[string]any{{"tool": "agent_status", "args": map[string]any{}}}},
		{"label": "refused", "token": ephKey, "calls": []map[string]any{{"tool": "create_agent", "args": map[string]any{"name": "dan"}}}},
		{"label": "oauth", "token": tok.AccessToken},
	})
	out := runPythonClient(t, image, base+"/mcp", string(specs))

	key := out["key"]
	require.Equal(t, "visor", key.Server)
	require.ElementsMatch(t, toolNames(t, r, w.adaKey), key.Tools)
	require.Contains(t, key.Tools, "agent_status")
	status := key.Calls["agent_status"]
	require.Nil(t, status.Error)
	require.False(t, status.IsError, status.Text)
	require.Contains(t, status.Text, "ada")

	refused := out["refused"]
	require.Contains(t, refused.Tools, "create_agent", "the refused tool is listed")
	call := refused.Calls["create_agent"]
	require.Nil(t, call.Error, "a listed tool's refusal is a result, not a JSON-RPC error")
	require.True(t, call.IsError)
	require.Contains(t, call.Text, "[permissions] can_create_agents is false")
	require.Equal(t, -32003, call.Structured.Refusal.Code)
	require.Equal(t, "permission_denied", call.Structured.Refusal.Event)
	require.Equal(t, call.Text, call.Structured.Refusal.Message)
	require.Equal(t, len(refused.Tools), refused.ToolsAfter, "the session goes on")

	oauth := out["oauth"]
	require.Equal(t, "visor", oauth.Server)
	require.NotEmpty(t, oauth.Tools)
	require.ElementsMatch(t, toolNames(t, r, tok.AccessToken), oauth.Tools)
}

// runPythonClient runs testdata/pyclient/client.py in image against url
// with specs and decodes what it printed.
func runPythonClient(t *testing.T, image, url, specs string) map[string]pyResult {
	t.Helper()
	dir, err := filepath.Abs("testdata/pyclient")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "host", "-v", dir+":/client:ro",
		image, "python3", "/client/client.py", url, specs)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	raw, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var out map[string]pyResult
	require.NoError(t, json.Unmarshal(raw, &out), "%s\n%s", raw, stderr.String())
	return out
}

// pythonClientImage returns the local image the Python client runs in
// (Debian with the MCP Python SDK from Debian's python3-mcp), built by
// testdata/pyclient/build-image.sh from Debian's packages the first time;
// the script tags it by a hash of its inputs, so a machine builds it once.
func pythonClientImage(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"docker", "debootstrap"} {
		if _, err := exec.LookPath(bin); err != nil {
			pgtest.Unavailable(t, bin, err)
		}
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		pgtest.Unavailable(t, "Docker Engine", errorWithOutput{err, out})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "testdata/pyclient/build-image.sh")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		pgtest.Unavailable(t, "Debian's python3-mcp (testdata/pyclient/build-image.sh)", errorWithOutput{err, tail([]byte(stderr.String()))})
	}
	image := strings.TrimSpace(string(out))
	t.Logf("image %s ready in %s", image, time.Since(start).Round(time.Second))
	return image
}

func imageExists(image string) bool {
	return exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", image).Run() == nil
}

// tail keeps the end of a long command output.
func tail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}
