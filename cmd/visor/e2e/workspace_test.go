package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/cgi"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker/dockertest"
	"github.com/visorhq/visor/services/identity"
)

// gitCA makes a CA certificate for names and its PEM.
func gitCA(t *testing.T, names ...string) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// gitServer serves the bare repositories under root over HTTPS at
// addr:443 with git's own http-backend.
func gitServer(t *testing.T, addr netip.Addr, cert tls.Certificate, root string) {
	t.Helper()
	backend, err := exec.Command("git", "--exec-path").Output()
	require.NoError(t, err)
	h := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 443).String())
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// calcRepo makes a bare repository holding a small Python project whose
// test fails until add is fixed.
func calcRepo(t *testing.T) string {
	t.Helper()
	root, work := t.TempDir(), t.TempDir()
	files := map[string]string{
		"calc.py":      "def add(a, b):\n    return a - b\n",
		"test_calc.py": "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\nif __name__ == '__main__':\n    unittest.main()\n",
	}
	for n, c := range files {
		require.NoError(t, os.WriteFile(filepath.Join(work, n), []byte(c), 0o644))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "calc"},
		{"clone", "-q", "--bare", work, filepath.Join(root, "calc.git")}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return root
}

type wsResult struct {
	IsError bool
	Text    string
	S       map[string]any
}

func wsCall(t *testing.T, r *replica, token, name string, args map[string]any) wsResult {
	t.Helper()
	res := callFull(t, r, token, name, args)
	out := wsResult{IsError: res.IsError}
	for _, c := range res.Content {
		out.Text += c.Text
	}
	if len(res.Structured) > 0 {
		require.NoError(t, json.Unmarshal(res.Structured, &out.S))
	}
	return out
}

// TestWorkspaceOverMCP is the workspace as an AI employee's runtime drives
// it with its key, through serve and the worker plane, on a real workspace
// worker: clone a repository from an allowed local HTTPS host, run its
// failing test (a normal result with command_ok false), fix it with
// file_edit and expected_matches, run the test again, follow a long
// command with session_observe, publish the project and fetch it by its
// signed URL. Escapes are refused: paths, links, the network, another
// employee's workspace, another tenant's link.
func TestWorkspaceOverMCP(t *testing.T) {
	image := dockertest.Workspace(t)
	w := newWorld(t)
	b, c := 1+mrand.IntN(250), 1+mrand.IntN(250)
	gitIP, evilIP := netip.AddrFrom4([4]byte{127, byte(b), byte(c), 6}), netip.AddrFrom4([4]byte{127, byte(b), byte(c), 7})
	cert, caPEM := gitCA(t, "git.test", "evil.test")
	repos := calcRepo(t)
	gitServer(t, gitIP, cert, repos)
	gitServer(t, evilIP, cert, repos)
	redisURL := privateRedis(t).URL()
	r := startReplica(t, "a", w.dbURL, redisURL)
	workerID := "e2e-" + uuid.NewString()[:8]
	startWorker(t, "workspace", w.dbURL, redisURL, "VISOR_WORKSPACE_WORKER=true", "VISOR_WORKSPACE_IMAGE="+image, "VISOR_WORKER_ID="+workerID,
		"VISOR_WORKSPACE_DEV_HOSTS=git.test="+gitIP.String()+",evil.test="+evilIP.String())
	for _, a := range []identity.Agent{w.ada, w.bob} {
		w.api(t, r, http.MethodPut, "/tenants/acme/agents/"+a.ID.String()+"/settings", map[string]any{"settings": identity.AgentSettings{
			Capabilities: identity.Capabilities{Workspace: true, WorkspaceConfig: identity.WorkspaceConfig{AllowedHosts: []string{"git.test"}}}}}, nil)
	}
	ada := func(name string, args map[string]any) wsResult { return wsCall(t, r, w.adaKey, name, args) }

	res := ada("file_edit", map[string]any{"action": "add", "path": "ca.pem", "content": caPEM})
	require.False(t, res.IsError, res.Text)
	res = ada("exec_command", map[string]any{"cmd": "git -c http.sslCAInfo=/workspace/ca.pem clone -q https://git.test/calc.git repo && ls repo", "timeout_ms": 60000, "wait_ms": 60000})
	require.False(t, res.IsError, res.Text)
	require.Equal(t, true, res.S["command_ok"], res.Text)
	require.Contains(t, res.S["output"], "calc.py")
	require.NotContains(t, res.S, "ok")

	res = ada("exec_command", map[string]any{"cmd": "python3 -m unittest -q test_calc", "workdir": "repo", "wait_ms": 30000})
	require.False(t, res.IsError, "a failing command is a normal result: %s", res.Text)
	require.Equal(t, false, res.S["command_ok"])
	require.Equal(t, float64(1), res.S["exit_code"])
	require.Equal(t, "exit status 1", res.S["command_error"])
	require.Contains(t, res.S["output"], "AssertionError")

	res = ada("file_edit", map[string]any{"action": "replace", "path": "repo/calc.py", "old_text": "a - b", "new_text": "a + b", "expected_matches": 2})
	require.True(t, res.IsError, "a changed match count refuses the edit")
	require.Contains(t, res.Text, "not the 2 expected_matches")
	res = ada("file_edit", map[string]any{"action": "replace", "path": "repo/calc.py", "old_text": "a - b", "new_text": "a + b", "expected_matches": 1, "dry_run": true})
	require.False(t, res.IsError, res.Text)
	require.Equal(t, false, res.S["written"])
	require.Contains(t, res.S["diff"], "+    return a + b")
	res = ada("file_edit", map[string]any{"action": "replace", "path": "repo/calc.py", "old_text": "a - b", "new_text": "a + b", "expected_matches": 1})
	require.False(t, res.IsError, res.Text)
	require.Equal(t, true, res.S["written"])
	res = ada("exec_command", map[string]any{"cmd": "python3 -m unittest -q test_calc", "workdir": "repo", "wait_ms": 30000})
	require.Equal(t, true, res.S["command_ok"], res.Text)
	require.Equal(t, float64(0), res.S["exit_code"])

	res = ada("exec_command", map[string]any{"cmd": "for i in 1 2 3; do echo tick $i; sleep 1; done", "wait_ms": 300})
	require.False(t, res.IsError, res.Text)
	require.Equal(t, "running", res.S["status"])
	require.NotContains(t, res.S, "command_ok", "a running command reports no command_ok")
	session := res.S["session_id"].(string)
	out, cursor := res.S["output"].(string), res.S["next_cursor"]
	for res.S["status"] == "running" {
		res = ada("session_observe", map[string]any{"action": "status", "session_id": session, "cursor": cursor, "wait_ms": 5000})
		require.False(t, res.IsError, res.Text)
		out += res.S["output"].(string)
		cursor = res.S["next_cursor"]
	}
	require.Equal(t, "tick 1\ntick 2\ntick 3\n", out)
	require.Equal(t, true, res.S["command_ok"])
	res = ada("session_observe", map[string]any{"action": "list"})
	require.Contains(t, res.Text, session)

	res = ada("file_publish", map[string]any{"path": "repo", "ttl_seconds": 600})
	require.False(t, res.IsError, res.Text)
	link, sum := res.S["url"].(string), res.S["sha256"].(string)
	require.True(t, strings.HasPrefix(link, r.base+"/t/acme/artifacts/"), link)
	resp, err := http.Get(link)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got := sha256.Sum256(body)
	require.Equal(t, sum, hex.EncodeToString(got[:]))
	require.Contains(t, tarFile(t, body, "calc.py"), "return a + b")

	// Escapes.
	res = ada("read_file", map[string]any{"path": "../../etc/passwd"})
	require.True(t, res.IsError, res.Text)
	ada("exec_command", map[string]any{"cmd": "ln -s /etc/passwd leak && ln -s / root", "wait_ms": 10000})
	for _, p := range []string{"leak", "root/etc/passwd"} {
		res = ada("read_file", map[string]any{"path": p})
		require.True(t, res.IsError, "read through a link out (%s): %s", p, res.Text)
		require.Contains(t, res.Text, "outside the workspace")
	}
	res = ada("exec_command", map[string]any{"cmd": "git -c http.sslCAInfo=/workspace/ca.pem clone -q https://evil.test/calc.git evil", "timeout_ms": 60000, "wait_ms": 60000})
	require.False(t, res.IsError, res.Text)
	require.Equal(t, false, res.S["command_ok"], "a host off the allow list is refused: %s", res.Text)
	require.Contains(t, res.S["output"], "403")
	res = ada("exec_command", map[string]any{"cmd": "python3 -c \"import socket; socket.create_connection(('" + gitIP.String() + "', 443), timeout=3)\"", "wait_ms": 20000})
	require.Equal(t, false, res.S["command_ok"], "no route out but the proxy: %s", res.Text)

	res = wsCall(t, r, w.bobKey, "read_file", map[string]any{"path": "repo/calc.py"})
	require.True(t, res.IsError, "bob's workspace is his own: %s", res.Text)
	res = wsCall(t, r, w.bobKey, "list_dir", map[string]any{})
	require.False(t, res.IsError, res.Text)
	require.NotContains(t, res.Text, "repo")

	// The audit trail keeps a keyed hash of each path and sizes, never
	// contents or commands.
	for _, tool := range []string{"file_edit", "exec_command", "read_file"} {
		rows := auditRows(t, w, r, "tool="+tool)
		require.NotEmpty(t, rows, tool)
		for _, row := range rows {
			change, _ := row["change"].(string)
			for _, secret := range []string{"calc.py", "a + b", "BEGIN CERTIFICATE", "unittest", "git.test"} {
				require.NotContains(t, change, secret, "%s's audit row", tool)
			}
		}
	}
	edits := auditRows(t, w, r, "tool=file_edit&outcome=ok")
	var note map[string]any
	require.NoError(t, json.Unmarshal([]byte(edits[0]["change"].(string)), &note))
	require.Contains(t, note, "path_sha256")
	require.Contains(t, note, "new_text_chars")

	other := strings.Replace(link, "/t/acme/", "/t/globex/", 1)
	resp, err = http.Get(other)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "acme's link under globex")
	resp, err = http.Get(link + "x")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a forged token")
}

// tarFile returns the content of name in a tar.gz.
func tarFile(t *testing.T, tgz []byte, name string) string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		require.NoError(t, err, "no %s in the archive", name)
		if h.Name == name {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			return string(b)
		}
	}
}
