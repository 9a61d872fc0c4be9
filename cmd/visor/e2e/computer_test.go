package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/dockertest"
	"github.com/visorhq/visor/services/identity"
)

const loginPage = `<!doctype html><title>Sign in</title><style>body{margin:0;background:#2a6}input{position:absolute;width:300px;height:40px;font-size:20px}</style>
<form method="post" action="/login"><input id="user" name="user" style="left:20px;top:100px">
<input id="pw" name="pw" type="password" style="left:20px;top:200px" value="hunter2hunter2"></form>`

// httpsSite serves loginPage over TLS at addr:443 and counts requests.
func httpsSite(t *testing.T, addr netip.Addr, cert tls.Certificate) *atomic.Int64 {
	t.Helper()
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/favicon.ico", http.NotFound)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, loginPage)
	})
	ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 443).String())
	require.NoError(t, err)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &hits
}

func testCert(t *testing.T, names ...string) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	sum := sha256.Sum256(pub)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, base64.StdEncoding.EncodeToString(sum[:])
}

// content is one block of a tools/call result.
type content struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	MIMEType string `json:"mimeType"`
	Data     []byte `json:"data"`
}

type fullResult struct {
	IsError    bool            `json:"isError"`
	Structured json.RawMessage `json:"structuredContent"`
	Content    []content       `json:"content"`
}

func callFull(t *testing.T, r *replica, token, name string, args map[string]any) fullResult {
	t.Helper()
	res, _ := mcpPost(t, r, token, modernVersion, "", map[string]any{"id": 1, "method": "tools/call",
		"params": map[string]any{"_meta": modernMeta(), "name": name, "arguments": args}})
	require.Nil(t, res.Error, "%s: %+v", name, res.Error)
	var out fullResult
	require.NoError(t, json.Unmarshal(res.Result, &out))
	return out
}

// TestComputerUseOverMCP is a session as an AI employee's runtime drives
// it with its key: start on an allowlisted local HTTPS site, click, type
// into the form, a screenshot with the password field masked, a navigation
// to an unlisted host refused, a workspace file written and read back,
// stop — and no container left.
func TestComputerUseOverMCP(t *testing.T) {
	image := dockertest.Browser(t)
	w := newWorld(t)
	b, c := 1+mrand.IntN(250), 1+mrand.IntN(250)
	shopIP, evilIP := netip.AddrFrom4([4]byte{127, byte(b), byte(c), 4}), netip.AddrFrom4([4]byte{127, byte(b), byte(c), 5})
	cert, spki := testCert(t, "shop.test", "evil.test")
	shop, evil := httpsSite(t, shopIP, cert), httpsSite(t, evilIP, cert)
	redisURL := privateRedis(t).URL()
	r := startReplica(t, "a", w.dbURL, redisURL)
	workerID := "e2e-" + uuid.NewString()[:8]
	computerWorker(t, w, redisURL, workerID, image, "shop.test="+shopIP.String()+",evil.test="+evilIP.String(), spki)
	w.api(t, r, http.MethodPatch, "/tenants/acme", map[string]any{"settings": identity.TenantSettings{ComputerUseWorkspaces: true}}, nil)
	w.api(t, r, http.MethodPut, "/tenants/acme/agents/"+w.ada.ID.String()+"/settings", map[string]any{"settings": identity.AgentSettings{
		Capabilities: identity.Capabilities{ComputerUse: true, ComputerUseConfig: identity.ComputerUseConfig{
			Workspace: true, AllowedDomains: []string{"shop.test"}}}}}, nil)

	start := callFull(t, r, w.adaKey, "computer_session_start", map[string]any{"width": "800", "height": 600, "workspace": "new"})
	require.False(t, start.IsError, "%+v", start)
	require.Contains(t, start.Content[0].Text, "computer_navigate can open: shop.test")
	require.Contains(t, start.Content[0].Text, "cannot be confirmed in a chat")
	var started struct {
		SessionID   string `json:"session_id"`
		WorkspaceID string `json:"workspace_id"`
		MountPath   string `json:"mount_path"`
	}
	require.NoError(t, json.Unmarshal(start.Structured, &started))
	require.Equal(t, "/workspace/files", started.MountPath)
	require.Equal(t, workerID+"-browser", sessionWorker(t, w, started.SessionID), "the session lives on the computer worker")

	for _, step := range []struct {
		name string
		args map[string]any
	}{
		{"computer_navigate", map[string]any{"url": "https://shop.test/login"}},
		{"computer_click", map[string]any{"x": 100, "y": 120}},
		{"computer_type", map[string]any{"text": "ada@example.test"}},
	} {
		res := callFull(t, r, w.adaKey, step.name, step.args)
		require.False(t, res.IsError, "%s: %+v", step.name, res)
	}
	require.Equal(t, int64(1), shop.Load())

	shot := callFull(t, r, w.adaKey, "computer_screenshot", nil)
	require.False(t, shot.IsError)
	require.Len(t, shot.Content, 2)
	require.Equal(t, "image", shot.Content[0].Type)
	require.Equal(t, "image/png", shot.Content[0].MIMEType)
	require.Contains(t, shot.Content[1].Text, "Actions used: 3 of 50.")
	require.Contains(t, shot.Content[1].Text, "Time left:")
	img, err := png.Decode(bytes.NewReader(shot.Content[0].Data))
	require.NoError(t, err)
	for x := 20; x < 320; x += 10 {
		cr, cg, cb, _ := img.At(x, 220).RGBA()
		require.Zero(t, cr|cg|cb, "the password field is masked at %d,220", x)
	}
	cr, cg, cb, _ := img.At(600, 500).RGBA()
	require.NotZero(t, cr|cg|cb)

	refused := callFull(t, r, w.adaKey, "computer_navigate", map[string]any{"url": "https://evil.test/"})
	require.True(t, refused.IsError)
	require.Contains(t, refused.Content[0].Text, "not on this AI employee's allowed_domains")
	require.Zero(t, evil.Load())

	wrote := callFull(t, r, w.adaKey, "computer_workspace_write", map[string]any{"workspace_id": started.WorkspaceID,
		"path": "notes/signin.txt", "content": "signed in as ada", "expected_revision": "0"})
	require.False(t, wrote.IsError, "%+v", wrote)
	read := callFull(t, r, w.adaKey, "computer_workspace_read", map[string]any{"workspace_id": started.WorkspaceID, "path": "notes/signin.txt"})
	require.False(t, read.IsError)
	require.Contains(t, read.Content[0].Text, "<computer_workspace_file path=\"notes/signin.txt\" injection_flags=\"none\">\nsigned in as ada\n</computer_workspace_file>")
	// The write reached the worker holding the session: its mounted copy
	// has the file (for root only).
	out, err := exec.Command("docker", "exec", "-u", "0", "visor-cu-"+started.SessionID, "cat", "/workspace/files/notes/signin.txt").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "signed in as ada", string(out))

	stop := callFull(t, r, w.adaKey, "computer_session_stop", map[string]any{"session_id": started.SessionID})
	require.False(t, stop.IsError)
	require.Empty(t, sessionContainers(t, docker.LabelTenant+"="+w.acme.ID.String()), "no container is left")

	// The audit trail keeps a count of what was typed and the host, never
	// the text, the URL's path, the file's path or its content.
	rows, err := w.db.Pool.Query(context.Background(), `SELECT tool, change FROM audit_events WHERE tenant_id = $1 AND tool LIKE 'computer_%' AND outcome <> 'pending'`, w.acme.ID)
	require.NoError(t, err)
	changes := map[string][]string{}
	for rows.Next() {
		var tool, change string
		require.NoError(t, rows.Scan(&tool, &change))
		changes[tool] = append(changes[tool], change)
		for _, secret := range []string{"ada@example.test", "login", "signin", "signed in"} {
			require.NotContains(t, change, secret, tool)
		}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{`{"text_chars":16}`}, changes["computer_type"])
	require.ElementsMatch(t, []string{`{"url_host":"shop.test"}`, `{"url_host":"evil.test"}`}, changes["computer_navigate"])
	require.Len(t, changes["computer_workspace_write"], 1)
	require.Contains(t, changes["computer_workspace_write"][0], `"content_chars":16`)
	require.Contains(t, changes["computer_workspace_write"][0], `"path_sha256":"`)
}

// computerWorker starts `visor worker` as a computer worker named id (its
// plane name is id-browser), with test host pins and a trusted test
// certificate, sweeping every second.
func computerWorker(t *testing.T, w *world, redisURL, id, image, pins, spki string, env ...string) *workerProc {
	t.Helper()
	t.Cleanup(func() { // what a failed test's killed worker left behind
		if ids := sessionContainers(t, docker.LabelWorker+"="+id+"-browser"); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	return startWorker(t, id, w.dbURL, redisURL, append([]string{"VISOR_COMPUTER_WORKER=true", "VISOR_COMPUTER_IMAGE=" + image, "VISOR_WORKER_ID=" + id,
		"VISOR_COMPUTER_DEV_HOSTS=" + pins, "VISOR_COMPUTER_DEV_TRUST_SPKI=" + spki, "VISOR_COMPUTER_SWEEP_EVERY=1s"}, env...)...)
}

// sessionWorker is the worker a session's row names.
func sessionWorker(t *testing.T, w *world, session string) string {
	t.Helper()
	var worker string
	require.NoError(t, w.db.Pool.QueryRow(context.Background(), `SELECT worker FROM computer_sessions WHERE id = $1`, session).Scan(&worker))
	return worker
}

// sessionID is the session a computer_session_start result names.
func sessionID(t *testing.T, res fullResult) string {
	t.Helper()
	var st struct {
		SessionID string `json:"session_id"`
	}
	require.NoError(t, json.Unmarshal(res.Structured, &st))
	require.NotEmpty(t, st.SessionID)
	return st.SessionID
}

// sessionContainers lists the session containers with a label.
func sessionContainers(t *testing.T, label string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+docker.LabelKind+"="+string(docker.Browser), "--filter", "label="+label).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.Fields(string(out))
}

// TestComputerSessionsLiveOnTheWorkerThatHoldsThem runs serve and two
// computer workers: each employee's session starts on one worker, every
// later call reaches that worker (a call on the other one would find no
// session and report it lost), and when a holding worker is killed the
// next call reports the session lost within seconds, its workspace is
// released, and the other worker's janitor removes the dead worker's
// container while the other session goes on.
func TestComputerSessionsLiveOnTheWorkerThatHoldsThem(t *testing.T) {
	image := dockertest.Browser(t)
	w := newWorld(t)
	ctx := context.Background()
	redisURL := privateRedis(t).URL()
	r := startReplica(t, "serve", w.dbURL, redisURL)
	w.api(t, r, http.MethodPatch, "/tenants/acme", map[string]any{"settings": identity.TenantSettings{ComputerUseWorkspaces: true}}, nil)
	for _, a := range []identity.Agent{w.ada, w.bob} {
		w.api(t, r, http.MethodPut, "/tenants/acme/agents/"+a.ID.String()+"/settings", map[string]any{"settings": identity.AgentSettings{
			Capabilities: identity.Capabilities{ComputerUse: true, ComputerUseConfig: identity.ComputerUseConfig{Workspace: true}}}}, nil)
	}
	suffix := uuid.NewString()[:8]
	idA, idB := "e2e-a-"+suffix, "e2e-b-"+suffix
	// Each worker holds one session at most: once ada's is on A, only B
	// has room for bob's.
	computerWorker(t, w, redisURL, idA, image, "", "", "VISOR_COMPUTER_MAX_SESSIONS=1")
	start := func(key string) (session, workspace string) {
		res := callFull(t, r, key, "computer_session_start", map[string]any{"width": 800, "height": 600, "workspace": "new"})
		require.False(t, res.IsError, "%+v", res)
		var st struct {
			SessionID   string `json:"session_id"`
			WorkspaceID string `json:"workspace_id"`
		}
		require.NoError(t, json.Unmarshal(res.Structured, &st))
		return st.SessionID, st.WorkspaceID
	}
	adaSession, _ := start(w.adaKey)
	require.Equal(t, idA+"-browser", sessionWorker(t, w, adaSession))

	workerB := computerWorker(t, w, redisURL, idB, image, "", "", "VISOR_COMPUTER_MAX_SESSIONS=1")
	var bob struct{ session, workspace string }
	bob.session, bob.workspace = start(w.bobKey)
	require.NotEmpty(t, bob.session, "bob's session started")
	require.Equal(t, idB+"-browser", sessionWorker(t, w, bob.session))

	for range 2 {
		for _, key := range []string{w.adaKey, w.bobKey} {
			res := callFull(t, r, key, "computer_screenshot", nil)
			require.False(t, res.IsError, "%+v", res)
			res = callFull(t, r, key, "computer_key", map[string]any{"key": "Tab"})
			require.False(t, res.IsError, "%+v", res)
		}
	}
	require.Len(t, sessionContainers(t, docker.LabelWorker+"="+idA+"-browser"), 1)
	require.Len(t, sessionContainers(t, docker.LabelWorker+"="+idB+"-browser"), 1)

	// B dies: bob hears "lost" on his next call, with the next step.
	workerB.kill()
	at := time.Now()
	lost := callFull(t, r, w.bobKey, "computer_screenshot", nil)
	require.True(t, lost.IsError)
	require.Contains(t, lost.Content[0].Text, "was lost")
	require.Contains(t, lost.Content[0].Text, "call computer_session_start to start a new session")
	require.Less(t, time.Since(at), 8*time.Second)
	var state string
	var leased bool
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT state FROM computer_sessions WHERE id = $1`, bob.session).Scan(&state))
	require.Equal(t, "lost", state)
	wsID, err := uuid.Parse(strings.TrimPrefix(bob.workspace, "ws-"))
	require.NoError(t, err)
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT lease_session IS NOT NULL FROM computer_workspaces WHERE id = $1`, wsID).Scan(&leased))
	require.False(t, leased, "the lost session's workspace is released")
	var n int
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND event_type = 'computer_session_lost'`, w.acme.ID).Scan(&n))
	require.Equal(t, 1, n, "the refusal is audited")

	// A's janitor removes what B left; ada's session goes on.
	require.Eventually(t, func() bool { return len(sessionContainers(t, docker.LabelWorker+"="+idB+"-browser")) == 0 },
		20*time.Second, 200*time.Millisecond, "the dead worker's container is reaped")
	res := callFull(t, r, w.adaKey, "computer_screenshot", nil)
	require.False(t, res.IsError, "%+v", res)
	res = callFull(t, r, w.adaKey, "computer_session_stop", nil)
	require.False(t, res.IsError)
	res = callFull(t, r, w.bobKey, "computer_session_start", map[string]any{"width": 800, "height": 600, "workspace": bob.workspace})
	require.False(t, res.IsError, "bob starts again, on A (now free), with his workspace: %+v", res)
	require.Equal(t, idA+"-browser", sessionWorker(t, w, sessionID(t, res)))
	res = callFull(t, r, w.bobKey, "computer_session_stop", nil)
	require.False(t, res.IsError)
	require.Empty(t, sessionContainers(t, docker.LabelTenant+"="+w.acme.ID.String()))
}

// TestARestartedComputerWorkerCleansUpItsEarlierLife: a computer worker is
// killed mid-session and started again under the same name: at start its
// janitor removes the container its earlier life left and reports that
// session lost (its workspace released) before any call comes, and the
// employee's next call hears that the session was lost.
func TestARestartedComputerWorkerCleansUpItsEarlierLife(t *testing.T) {
	image := dockertest.Browser(t)
	w := newWorld(t)
	ctx := context.Background()
	redisURL := privateRedis(t).URL()
	r := startReplica(t, "serve", w.dbURL, redisURL)
	w.api(t, r, http.MethodPatch, "/tenants/acme", map[string]any{"settings": identity.TenantSettings{ComputerUseWorkspaces: true}}, nil)
	w.api(t, r, http.MethodPut, "/tenants/acme/agents/"+w.ada.ID.String()+"/settings", map[string]any{"settings": identity.AgentSettings{
		Capabilities: identity.Capabilities{ComputerUse: true, ComputerUseConfig: identity.ComputerUseConfig{Workspace: true}}}}, nil)
	id := "e2e-r-" + uuid.NewString()[:8]
	worker := computerWorker(t, w, redisURL, id, image, "", "")
	res := callFull(t, r, w.adaKey, "computer_session_start", map[string]any{"width": 800, "height": 600, "workspace": "new"})
	require.False(t, res.IsError, "%+v", res)
	var st struct {
		SessionID   string `json:"session_id"`
		WorkspaceID string `json:"workspace_id"`
	}
	require.NoError(t, json.Unmarshal(res.Structured, &st))
	label := docker.LabelWorker + "=" + id + "-browser"
	require.Len(t, sessionContainers(t, label), 1)

	worker.kill()
	require.Len(t, sessionContainers(t, label), 1, "a killed worker cannot clean up")
	computerWorker(t, w, redisURL, id, image, "", "")
	require.Empty(t, sessionContainers(t, label), "the restarted worker removed its earlier life's container before it was ready")
	var state string
	var leased bool
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT state FROM computer_sessions WHERE id = $1`, st.SessionID).Scan(&state))
	require.Equal(t, "lost", state, "reported lost before any call")
	wsID, err := uuid.Parse(strings.TrimPrefix(st.WorkspaceID, "ws-"))
	require.NoError(t, err)
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT lease_session IS NOT NULL FROM computer_workspaces WHERE id = $1`, wsID).Scan(&leased))
	require.False(t, leased)

	lost := callFull(t, r, w.adaKey, "computer_screenshot", nil)
	require.True(t, lost.IsError)
	require.Contains(t, lost.Content[0].Text, "your session "+st.SessionID+" was lost")
	require.Contains(t, lost.Content[0].Text, "call computer_session_start to start a new session")
	res = callFull(t, r, w.adaKey, "computer_session_start", map[string]any{"width": 800, "height": 600, "workspace": st.WorkspaceID})
	require.False(t, res.IsError, "a new session with the same workspace: %+v", res)
	res = callFull(t, r, w.adaKey, "computer_session_stop", nil)
	require.False(t, res.IsError)
	require.Empty(t, sessionContainers(t, label))
}
