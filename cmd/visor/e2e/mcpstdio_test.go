package e2e

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker/dockertest"
	"github.com/visorhq/visor/services/secrets"
)

// TestStdioServerOverMCP is a stdio upstream server as deployed: an
// operator adds it and its environment value with the admin API of
// `visor serve`, a `visor worker` with VISOR_MCP_STDIO_WORKER=true runs it
// in a container (both with the same VISOR_SECRET_KEYS; the image on the
// tenant's list and on the worker's), and an AI
// employee calls its tools with mcp_tool_call over MCP. The worker removes
// its containers when it stops.
func TestStdioServerOverMCP(t *testing.T) {
	t.Parallel()
	image := dockertest.MCPFixture(t)
	w := newWorld(t)
	spec, err := secrets.NewKey("e2e")
	require.NoError(t, err)
	keys := "VISOR_SECRET_KEYS=" + spec
	redisURL := privateRedis(t).URL()
	r := startReplica(t, "a", w.dbURL, redisURL, keys)
	workerID := "e2e-" + uuid.NewString()[:8]
	t.Cleanup(func() { // after the worker stopped: nothing of it is left
		out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=org.visor.worker="+workerID+"-mcpstdio").Output()
		require.NoError(t, err)
		require.Empty(t, strings.TrimSpace(string(out)), "the stopped worker removed its stdio containers")
	})
	startWorker(t, "mcpstdio", w.dbURL, redisURL, keys, "VISOR_MCP_STDIO_WORKER=true", "VISOR_MCP_STDIO_IMAGES="+image, "VISOR_WORKER_ID="+workerID)

	var srv struct {
		LastError string `json:"last_error"`
		ToolCount int    `json:"tool_count"`
	}
	add := map[string]any{"name": "tools", "transport": "stdio", "image": image, "command": dockertest.MCPFixtureCommand}
	status, body := w.apiStatus(t, r, http.MethodPost, "/tenants/acme/mcp-servers", add)
	require.Equal(t, http.StatusBadRequest, status, "the image is not on the tenant's list yet: %s", body)
	require.Contains(t, body, "mcp_stdio_images")
	var refusals struct {
		Events []struct {
			Message string `json:"message"`
		} `json:"events"`
	}
	w.api(t, r, http.MethodGet, "/tenants/acme/audit?action=createMCPServer&outcome=rejected", nil, &refusals)
	require.Len(t, refusals.Events, 1, "the refusal is audited")
	require.Contains(t, refusals.Events[0].Message, "mcp_stdio_images")
	var ten struct {
		Settings map[string]any `json:"settings"`
	}
	w.api(t, r, http.MethodGet, "/tenants/acme", nil, &ten)
	ten.Settings["mcp_stdio_images"] = []string{image}
	w.api(t, r, http.MethodPatch, "/tenants/acme", map[string]any{"settings": ten.Settings}, nil)
	w.api(t, r, http.MethodPost, "/tenants/acme/mcp-servers", add, &srv)
	require.Empty(t, srv.LastError)
	require.Positive(t, srv.ToolCount)
	w.api(t, r, http.MethodPut, "/tenants/acme/mcp-servers/tools/secrets", map[string]any{"kind": "env", "name": "API_TOKEN",
		"secret_value": "e2e-secret"}, nil)

	res := callFull(t, r, w.adaKey, "mcp_tool_call", map[string]any{"name": "tools:echo", "arguments": map[string]any{"text": "hi"}})
	require.False(t, res.IsError, "%+v", res)
	require.Contains(t, res.Content[0].Text, "echo: hi")
	res = callFull(t, r, w.adaKey, "mcp_tool_call", map[string]any{"name": "tools:getenv", "arguments": map[string]any{"name": "API_TOKEN"}})
	require.False(t, res.IsError, "%+v", res)
	require.Contains(t, res.Content[0].Text, "e2e-secret", "the worker opened the sealed value")
}
