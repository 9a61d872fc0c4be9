package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker/dockertest"
	"github.com/visorhq/visor/services/identity"
)

// browserCat reads a file in a session's browser container.
func browserCat(t *testing.T, session, path string) (string, error) {
	t.Helper()
	out, err := exec.Command("docker", "exec", "visor-cu-"+session, "cat", path).CombinedOutput()
	return string(out), err
}

// TestTheBrowserSeesTheEmployeesWorkspace: one `visor worker` runs both
// kinds. A file an employee writes with file_edit before starting a
// browser session, and one a command writes after, are in the browser
// container at /workspace/tree; another employee's session sees only its
// own workspace there.
func TestTheBrowserSeesTheEmployeesWorkspace(t *testing.T) {
	browserImage, wsImage := dockertest.Browser(t), dockertest.Workspace(t)
	w := newWorld(t)
	_, spki := testCert(t, "shop.test")
	redisURL := privateRedis(t).URL()
	r := startReplica(t, "a", w.dbURL, redisURL)
	workerID := "e2e-" + uuid.NewString()[:8]
	computerWorker(t, w, redisURL, workerID, browserImage, "shop.test=127.0.0.9", spki,
		"VISOR_WORKSPACE_WORKER=true", "VISOR_WORKSPACE_IMAGE="+wsImage)
	for _, a := range []identity.Agent{w.ada, w.bob} {
		w.api(t, r, http.MethodPut, "/tenants/acme/agents/"+a.ID.String()+"/settings", map[string]any{"settings": identity.AgentSettings{
			Capabilities: identity.Capabilities{Workspace: true, ComputerUse: true}}}, nil)
	}
	type started struct {
		SessionID string `json:"session_id"`
		TreePath  string `json:"workspace_tree_path"`
		TreeNote  string `json:"workspace_tree_note"`
	}
	start := func(key string) started {
		t.Helper()
		res := callFull(t, r, key, "computer_session_start", map[string]any{"width": 800, "height": 600})
		require.False(t, res.IsError, "%+v", res)
		var st started
		require.NoError(t, json.Unmarshal(res.Structured, &st))
		require.Equal(t, "/workspace/tree", st.TreePath, st.TreeNote)
		require.Equal(t, workerID+"-browser", sessionWorker(t, w, st.SessionID))
		return st
	}

	res := wsCall(t, r, w.adaKey, "file_edit", map[string]any{"action": "add", "path": "out/report.txt", "content": "ada's report\n"})
	require.False(t, res.IsError, res.Text)
	ada := start(w.adaKey)
	out, err := browserCat(t, ada.SessionID, "/workspace/tree/out/report.txt")
	require.NoError(t, err, out)
	require.Equal(t, "ada's report\n", out)

	res = wsCall(t, r, w.adaKey, "exec_command", map[string]any{"cmd": "echo later > out/later.txt", "wait_ms": 30000})
	require.Equal(t, true, res.S["command_ok"], res.Text)
	out, err = browserCat(t, ada.SessionID, "/workspace/tree/out/later.txt")
	require.NoError(t, err, out)
	require.Equal(t, "later\n", out)

	res = wsCall(t, r, w.bobKey, "file_edit", map[string]any{"action": "add", "path": "bob.txt", "content": "bob's\n"})
	require.False(t, res.IsError, res.Text)
	bob := start(w.bobKey)
	out, err = browserCat(t, bob.SessionID, "/workspace/tree/bob.txt")
	require.NoError(t, err, out)
	require.Equal(t, "bob's\n", out)
	out, err = browserCat(t, bob.SessionID, "/workspace/tree/out/report.txt")
	require.Error(t, err, "ada's file is not in bob's browser: %s", out)

	for _, key := range []string{w.adaKey, w.bobKey} {
		res := callFull(t, r, key, "computer_session_stop", nil)
		require.False(t, res.IsError, "%+v", res)
	}
}
