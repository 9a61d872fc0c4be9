package mcpstdio_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/dockertest"
	"github.com/visorhq/visor/docker/mcpstdio"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/plane"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
	"github.com/visorhq/visor/upstream"
)

// fixtureImage and fixtureCommand are the Go SDK fixture server's
// (internal/fixture).
var (
	fixtureImage   = dockertest.MCPFixture
	fixtureCommand = dockertest.MCPFixtureCommand
)

// everythingEnv names the reference "everything" MCP server's entry point
// (node_modules/@modelcontextprotocol/server-everything/dist/index.js),
// installed from the npm registry by .ci/run.
const everythingEnv = "VISOR_TEST_MCP_EVERYTHING"

// everythingCommand runs the reference server over stdio in its image.
var everythingCommand = []string{"/usr/local/bin/node", "/opt/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"}

// everythingImage is the sandbox base with this machine's node binary and
// the installed reference server. Without it the test fails under
// VISOR_TEST_REQUIRE_SERVICES (CI), and is skipped loudly otherwise.
func everythingImage(t testing.TB) string {
	t.Helper()
	entry := os.Getenv(everythingEnv)
	if entry == "" {
		if os.Getenv("VISOR_TEST_REQUIRE_SERVICES") != "" {
			t.Fatalf("%s is not set: install @modelcontextprotocol/server-everything from the npm registry (.ci/run does)", everythingEnv)
		}
		t.Skipf("SKIPPED: %s is not set (.ci/run installs the reference server)", everythingEnv)
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the reference server")
	node, err = filepath.EvalSymlinks(node)
	require.NoError(t, err)
	modules := filepath.Join(filepath.Dir(entry), "..", "..", "..")
	require.FileExists(t, filepath.Join(modules, "@modelcontextprotocol", "server-everything", "package.json"))
	return dockertest.Derived(t, "mcp-everything", "COPY node /usr/local/bin/node\nCOPY node_modules /opt/everything/node_modules\n",
		map[string]string{"node": node, "node_modules": modules})
}

// harness is the upstream service with the stdio connector on a worker
// plane in Redis, one stdio worker (a Manager) behind it, and two tenants
// with one AI employee each.
type harness struct {
	db     *postgres.DB
	istore *postgres.IdentityStore
	ids    *identity.Service
	svc    *upstreams.Service
	reg    *tools.Registry
	m      *mcpstdio.Manager
	sent   *sentPayloads
	a, b   identity.Tenant
	agentA identity.Agent
	agentB identity.Agent
}

func newHarness(t testing.TB, images []string, idle time.Duration, mods ...func(*mcpstdio.Config)) *harness {
	t.Helper()
	db := pgtest.New(t)
	rdb := redistest.New(t)
	istore := postgres.NewIdentityStore(db)
	ids := identity.NewService(istore, changes.Discard{}, nil)
	ctx := context.Background()
	h := &harness{db: db, istore: istore, ids: ids, reg: tools.NewRegistry()}
	var err error
	h.a, err = ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	h.b, err = ids.CreateTenant(ctx, "globex", "Globex")
	require.NoError(t, err)
	for _, tn := range []*identity.Tenant{&h.a, &h.b} { // both tenants allow what the worker runs
		h.setImages(t, tn, images...)
	}
	h.agentA, err = ids.CreateAgent(ctx, h.a.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	h.agentB, err = ids.CreateAgent(ctx, h.b.ID, identity.NewAgent{Name: "bob"})
	require.NoError(t, err)
	spec, err := secrets.NewKey("k1")
	require.NoError(t, err)
	keys, err := secrets.ParseKeyring(spec)
	require.NoError(t, err)

	log := slog.New(slog.DiscardHandler)
	if os.Getenv("VISOR_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	prefix := redistest.Prefix(t)
	workerID := "stdio-test-" + prefix[5:17]
	cfg := mcpstdio.Config{WorkerID: workerID, Images: images, IdleAfter: idle, Runtime: os.Getenv("VISOR_SANDBOX_TEST_RUNTIME"), Version: "test"}
	for _, mod := range mods {
		mod(&cfg)
	}
	h.m, err = mcpstdio.New(cfg, log)
	require.NoError(t, err)
	j := mcpstdio.NewJanitor(h.m, time.Hour) // its first sweep and its last close; reaps are the tests'
	require.NoError(t, j.Start(ctx))
	t.Cleanup(func() {
		j.Stop()
		_, _ = docker.Sweep(context.Background(), h.m.Client(), docker.MCPStdio, workerID, 0, nil)
	})
	w := redisx.NewPlaneWorker(rdb, redisx.PlaneWorkerOptions{ID: workerID, Pools: []string{upstream.StdioPool}, Capacity: 64, Prefix: prefix}, log)
	for kind, hd := range upstream.StdioHandlers(h.m, keys) {
		w.Handle(kind, hd)
	}
	require.NoError(t, w.Start(ctx))
	t.Cleanup(w.Stop)

	h.sent = &sentPayloads{Caller: redisx.NewPlane(rdb, prefix, log)}
	h.svc = upstreams.NewService(upstreams.Config{Store: postgres.NewUpstreamStore(db), Keys: keys,
		Connectors: map[upstreams.Transport]upstreams.Connector{upstreams.Stdio: upstream.NewStdio(h.sent, keys)},
		StdioImages: func(ctx context.Context, tenantID uuid.UUID) ([]string, error) {
			t, err := ids.Tenant(ctx, tenantID)
			return t.Settings.MCPStdioImages, err
		},
		IdleTimeout: time.Minute})
	require.NoError(t, h.svc.Start(ctx))
	t.Cleanup(h.svc.Stop) // before the worker stops: sessions end first
	h.svc.Register(h.reg)
	return h
}

// setImages sets tenant's allow list of stdio images.
func (h *harness) setImages(t testing.TB, tenant *identity.Tenant, images ...string) {
	t.Helper()
	var err error
	*tenant, err = h.ids.UpdateTenant(context.Background(), tenant.ID, func(t *identity.Tenant) error {
		t.Settings.MCPStdioImages = images
		return nil
	})
	require.NoError(t, err)
}

// employee is the subject of tenant's agent.
func (h *harness) employee(tenant identity.Tenant, agent identity.Agent) *tools.Subject {
	return &tools.Subject{Principal: identity.Principal{TenantID: tenant.ID, Kind: identity.KindEmployee, AgentID: agent.ID,
		Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: tenant, Agent: &agent}
}

// add registers a stdio server of tenant.
func (h *harness) add(t testing.TB, tenant identity.Tenant, name, image string, command []string, mod func(*upstreams.Input)) upstreams.Server {
	t.Helper()
	in := upstreams.Input{Name: name, Transport: upstreams.Stdio, Image: image, Command: command}
	if mod != nil {
		mod(&in)
	}
	srv, err := h.svc.Create(context.Background(), tenant.ID, in, "test")
	require.NoError(t, err)
	require.Empty(t, srv.LastError)
	return srv
}

// text is the text of a result's first content block.
func text(t testing.TB, content json.RawMessage) string {
	t.Helper()
	var blocks []map[string]any
	require.NoError(t, json.Unmarshal(content, &blocks))
	require.NotEmpty(t, blocks)
	s, _ := blocks[0]["text"].(string)
	return s
}

// containers lists the stdio containers of tenant on the harness's worker.
func (h *harness) containers(t testing.TB, tenant identity.Tenant) []container.Summary {
	t.Helper()
	args := docker.Filter(docker.MCPStdio, h.m.WorkerID())
	args.Add("label", docker.LabelTenant+"="+tenant.ID.String())
	list, err := h.m.Client().ContainerList(context.Background(), container.ListOptions{All: true, Filters: args})
	require.NoError(t, err)
	return list
}

// sentPayloads keeps every payload the service sent over the plane.
type sentPayloads struct {
	plane.Caller
	mu  sync.Mutex
	all []string
}

func (s *sentPayloads) Call(ctx context.Context, r plane.Request, onProgress func(plane.Progress)) (json.RawMessage, error) {
	s.mu.Lock()
	s.all = append(s.all, string(r.Payload))
	s.mu.Unlock()
	return s.Caller.Call(ctx, r, onProgress)
}

// contains reports whether any payload held sub.
func (s *sentPayloads) contains(sub string) (n int, found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.all {
		found = found || strings.Contains(p, sub)
	}
	return len(s.all), found
}
