package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/workspace"
)

// TestViewImageURLsPassTheOutboundGuard: view_image with a URL whose host
// is on the employee's allowed hosts is still refused when it names a
// loopback, private or link-local address, and nothing connects to the
// listener on that address; a host off the allow list and a plain-http
// URL are refused before any fetch.
func TestViewImageURLsPassTheOutboundGuard(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	svc := workspace.NewService(workspace.Config{
		Images: egressImages{c: egress.New(egress.Config{Timeout: 3 * time.Second, MaxBytes: workspace.MaxImageBytes})}})
	reg := tools.NewRegistry()
	svc.Register(reg)
	tool, ok := reg.Get("view_image")
	require.True(t, ok)
	ag := identity.Agent{Name: "ada"}
	ag.Settings.Capabilities.Workspace = true
	ag.Settings.Capabilities.WorkspaceConfig.AllowedHosts = []string{"127.0.0.1", "localhost", "10.0.0.7", "169.254.169.254", "::1"}
	sub := &tools.Subject{Agent: &ag, Principal: identity.Principal{Kind: identity.KindEmployee}}
	view := func(u string) error {
		raw, _ := json.Marshal(map[string]any{"url": u})
		_, err := tool.Handler(context.Background(), tools.Call{Subject: sub, Name: "view_image", Raw: raw})
		return err
	}

	for _, u := range []string{"https://127.0.0.1:" + port + "/a.png", "https://localhost:" + port + "/a.png",
		"https://10.0.0.7/a.png", "https://169.254.169.254/latest/meta-data", "https://[::1]:" + port + "/a.png"} {
		err := view(u)
		require.Error(t, err, u)
		require.True(t, errors.Is(err, egress.ErrNotPublic), "%s: %v", u, err)
		require.False(t, fault.Is(err, fault.Internal), "a refusal, not a failure: %v", err)
	}
	require.Zero(t, accepted.Load(), "the guard refused before any connection")

	err = view("https://example.com/a.png")
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	require.Contains(t, err.Error(), "not on your workspace's allowed hosts")
	err = view("http://127.0.0.1:" + port + "/a.png")
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	require.Zero(t, accepted.Load())
}
