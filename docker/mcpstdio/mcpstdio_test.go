package mcpstdio_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/calls"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres"
)

// TestStdioServerEndToEnd: a Go SDK server over stdio in a container on a
// worker, reached over the worker plane. An AI employee searches,
// inspects and calls its tools through mcp_tool_call; a denied tool is
// refused and audited. Its sealed environment value reaches the server;
// it runs as 1000:1000 with a read-only root, every capability dropped
// and no network; one container is kept warm between calls; its
// tools/list_changed reaches search; a crash is followed by a fresh start;
// an idle server is removed and started again by the next call; another
// tenant's server of the same name is its own container and sees nothing
// of the first.
func TestStdioServerEndToEnd(t *testing.T) {
	t.Parallel()
	image := fixtureImage(t)
	h := newHarness(t, []string{image}, 200*time.Millisecond)
	ctx := context.Background()
	h.add(t, h.a, "tools", image, fixtureCommand, nil)
	_, err := h.svc.SetSecret(ctx, h.a.ID, "tools", upstreams.SecretEnv, "API_TOKEN", "s3cret-value")
	require.NoError(t, err)
	_, err = h.ids.UpdateAgent(ctx, h.a.ID, h.agentA.ID, func(a *identity.Agent) error {
		a.Settings.Capabilities.DeniedTools = []string{"mcp__tools__crash"}
		return nil
	})
	require.NoError(t, err)
	log := postgres.NewAuditLog(h.db, 1, slog.New(slog.DiscardHandler))
	require.NoError(t, log.Start(ctx))
	t.Cleanup(log.Stop)
	pipe := calls.New(h.reg, tools.NewSubjects(h.istore, tools.NoGrants{}, 0), log, nil)
	who := identity.Principal{TenantID: h.a.ID, Kind: identity.KindEmployee, AgentID: h.agentA.ID, Scopes: []string{identity.ScopeToolsAdmin}}
	call := func(name string, args any) calls.Answer {
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		return pipe.Call(ctx, who, name, raw, nil)
	}
	upcall := func(tool string, args map[string]any) calls.Answer {
		if args == nil {
			args = map[string]any{}
		}
		return call("mcp_tool_call", map[string]any{"name": "tools:" + tool, "arguments": args})
	}

	// Search, inspect, call; the denied tool is hidden and refused.
	a := call("mcp_tool_search", map[string]any{"query": "echo crash"})
	require.NotNil(t, a.Result, a.ToolError)
	raw, _ := json.Marshal(a.Result.Structured)
	require.Contains(t, string(raw), "tools:echo")
	require.NotContains(t, string(raw), "tools:crash", "search hides the denied tool")
	a = call("mcp_tool_inspect", map[string]any{"name": "tools:echo"})
	require.NotNil(t, a.Result, a.ToolError)
	require.Contains(t, a.Result.Text, `"input_schema"`)
	a = upcall("echo", map[string]any{"text": "こんにちは"})
	require.NotNil(t, a.Result, "%+v %+v", a, a.Refusal)
	require.Contains(t, string(a.Result.Content), "echo: こんにちは")
	require.Equal(t, audit.OutcomeOK, a.Entry.Outcome)
	a = upcall("crash", nil)
	require.NotNil(t, a.Refusal, "%+v", a)
	require.Equal(t, tools.CodeRefused, a.Refusal.Code)
	refused := a.Entry
	rows, err := log.List(ctx, h.a.ID, audit.Filter{Limit: 100, Tool: "mcp_tool_call"})
	require.NoError(t, err)
	var found bool
	for _, r := range rows {
		if r.ID == refused.ID {
			found = true
			require.Equal(t, audit.OutcomeRefused, r.Outcome)
			require.Equal(t, tools.EventCapabilityDenied, r.Event)
			require.Contains(t, r.Message, `denied_tools entry "mcp__tools__crash"`)
		}
	}
	require.True(t, found, "the refusal is audited")

	// The environment value was sealed in Postgres and on the plane, and
	// opened on the worker.
	sub := h.employee(h.a, h.agentA)
	out, err := h.svc.Call(ctx, sub, "tools:getenv", map[string]any{"name": "API_TOKEN"})
	require.NoError(t, err)
	require.Contains(t, text(t, out.Result.Content), "s3cret-value")
	n, leaked := h.sent.contains("s3cret-value")
	require.Positive(t, n)
	require.False(t, leaked, "no payload on the plane carries the value in the clear")

	// Locked down: non-root, read-only root, no capabilities, no network.
	out, err = h.svc.Call(ctx, sub, "tools:whoami", nil)
	require.NoError(t, err)
	require.Contains(t, text(t, out.Result.Content), "uid=1000 gid=1000")
	out, err = h.svc.Call(ctx, sub, "tools:write_root", nil)
	require.NoError(t, err)
	require.True(t, out.Result.IsError, "the root filesystem is read-only: %s", out.Result.Content)
	out, err = h.svc.Call(ctx, sub, "tools:fetch", map[string]any{"url": "https://example.com/"})
	require.NoError(t, err)
	require.True(t, out.Result.IsError, "no network without allow_hosts: %s", out.Result.Content)
	require.Contains(t, text(t, out.Result.Content), "refused")
	list := h.containers(t, h.a)
	require.Len(t, list, 1, "one warm container for the server")
	info, err := h.m.Client().ContainerInspect(ctx, list[0].ID)
	require.NoError(t, err)
	require.Equal(t, "1000:1000", info.Config.User)
	require.True(t, info.HostConfig.ReadonlyRootfs)
	require.Equal(t, []string{"ALL"}, []string(info.HostConfig.CapDrop))
	require.Contains(t, info.HostConfig.SecurityOpt, "no-new-privileges")
	require.Equal(t, "none", string(info.HostConfig.NetworkMode))
	require.Positive(t, info.HostConfig.Memory)
	require.NotNil(t, info.HostConfig.PidsLimit)
	require.Contains(t, info.HostConfig.Tmpfs, "/tmp")

	// Warm: the same process answers call after call.
	boot := func(s *tools.Subject, server string) string {
		out, err := h.svc.Call(ctx, s, server+":boot", nil)
		require.NoError(t, err)
		return text(t, out.Result.Content)
	}
	starts := h.m.Starts()
	first := boot(sub, "tools")
	require.Equal(t, first, boot(sub, "tools"))
	require.Equal(t, starts, h.m.Starts(), "kept warm: no new container between calls")

	// tools/list_changed refreshes search without anyone asking.
	out, err = h.svc.Call(ctx, sub, "tools:add_tool", map[string]any{"name": "fresh"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		hits, _, err := h.svc.Search(ctx, sub, "tools", "fresh", 5)
		return err == nil && len(hits) > 0 && hits[0].Name == "tools:fresh"
	}, 30*time.Second, 50*time.Millisecond, "the server's tools/list_changed reaches search")

	// A crash: the call fails, naming the server; the next starts it anew.
	_, err = h.svc.Call(ctx, h.employee(h.a, h.undenied(t)), "tools:crash", nil)
	require.Error(t, err)
	require.True(t, fault.Is(err, fault.Unavailable), "%v", err)
	require.Contains(t, fault.Message(err), "tools")
	second := boot(sub, "tools")
	require.NotEqual(t, first, second, "restarted after the crash")

	// Idle: reaped, and the next call starts it again.
	require.Eventually(t, func() bool { return h.m.ReapIdle() > 0 }, 30*time.Second, 50*time.Millisecond)
	require.Empty(t, h.containers(t, h.a), "the idle server's container is removed")
	require.NotEqual(t, second, boot(sub, "tools"), "a fresh start after the reap")

	// Tenant isolation: globex's server of the same name is its own.
	h.add(t, h.b, "tools", image, fixtureCommand, nil)
	subB := h.employee(h.b, h.agentB)
	out, err = h.svc.Call(ctx, subB, "tools:getenv", map[string]any{"name": "API_TOKEN"})
	require.NoError(t, err)
	require.NotContains(t, string(out.Result.Content), "s3cret", "another tenant's environment never reaches it")
	hits, _, err := h.svc.Search(ctx, subB, "tools", "fresh", 5)
	require.NoError(t, err)
	require.Empty(t, hits, "acme's added tool is not globex's")
	_, err = h.svc.Inspect(ctx, subB, "tools:fresh")
	var ref *tools.RefusalError
	require.ErrorAs(t, err, &ref)
	require.Len(t, h.containers(t, h.b), 1)
	require.Len(t, h.containers(t, h.a), 1)
	require.NotEqual(t, boot(sub, "tools"), boot(subB, "tools"), "two processes")
}

// undenied is a second employee of acme, allowed the crash tool.
func (h *harness) undenied(t *testing.T) identity.Agent {
	t.Helper()
	ag, err := h.ids.CreateAgent(context.Background(), h.a.ID, identity.NewAgent{Name: "cy"})
	require.NoError(t, err)
	return ag
}

// TestStdioImageAllowList: an image must be on the tenant's list and on
// the worker's. One off the tenant's list is refused when saved; one on
// the tenant's list but off the worker's never starts (it is never
// pulled) and the server is saved with the error.
func TestStdioImageAllowList(t *testing.T) {
	t.Parallel()
	image := fixtureImage(t)
	const absent = "visor-test/absent:never-pulled"
	h := newHarness(t, []string{image, absent}, time.Minute)
	in := upstreams.Input{Name: "other", Transport: upstreams.Stdio, Image: "debian:bookworm-slim", Command: []string{"true"}}
	_, err := h.svc.Create(context.Background(), h.a.ID, in, "test")
	require.ErrorContains(t, err, "not on the tenant's allow list of stdio images")

	h.setImages(t, &h.a, image, "debian:bookworm-slim", absent)
	srv, err := h.svc.Create(context.Background(), h.a.ID, in, "test")
	require.NoError(t, err)
	require.Contains(t, srv.LastError, "not on this worker's allow list")
	require.Empty(t, h.containers(t, h.a))

	// On both lists but not held by the worker: refused, never pulled.
	in.Name, in.Image = "absent", absent
	srv, err = h.svc.Create(context.Background(), h.a.ID, in, "test")
	require.NoError(t, err)
	require.Contains(t, srv.LastError, "images are never pulled")
	require.Error(t, exec.Command("docker", "image", "inspect", absent).Run(), "the image was not pulled")
	require.Empty(t, h.containers(t, h.a))
}

// TestEverythingServerOverStdio: the reference server from the npm
// registry, over stdio in a container: listed, searched and called.
func TestEverythingServerOverStdio(t *testing.T) {
	t.Parallel()
	image := everythingImage(t)
	h := newHarness(t, []string{image}, time.Minute)
	ctx := context.Background()
	srv := h.add(t, h.a, "everything", image, everythingCommand, nil)
	require.GreaterOrEqual(t, srv.ToolCount, 10)
	sub := h.employee(h.a, h.agentA)
	hits, _, err := h.svc.Search(ctx, sub, "everything", "echo message", 3)
	require.NoError(t, err)
	require.Equal(t, "everything:echo", hits[0].Name)
	out, err := h.svc.Call(ctx, sub, "everything:echo", map[string]any{"message": "こんにちは"})
	require.NoError(t, err)
	require.Contains(t, text(t, out.Result.Content), "Echo: こんにちは")
	out, err = h.svc.Call(ctx, sub, "everything:get-sum", map[string]any{"a": 2, "b": 3})
	require.NoError(t, err)
	require.True(t, strings.Contains(text(t, out.Result.Content), "5"))
	out, err = h.svc.Call(ctx, sub, "everything:get-structured-content", map[string]any{"location": "Chicago"})
	require.NoError(t, err)
	require.Contains(t, string(out.Result.Structured), "temperature")
}
