package workspace

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/egressproxy"
	"github.com/visorhq/visor/services/fault"
	domain "github.com/visorhq/visor/services/workspace"
)

// The container's limits: the script sandbox's.
const (
	Processes = 256
	NanoCPUs  = 1_000_000_000
)

func ioPipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

func (m *Manager) labels(h *held) map[string]string {
	return docker.Labels(docker.Workspace, m.cfg.WorkerID, h.ref.Tenant.String(), h.ref.ID.String())
}

// startContainer starts the workspace's container: no network at all, or,
// when the employee's allow list names hosts, an internal network whose
// only way out is an egress proxy on the worker that tunnels HTTPS to
// those hosts alone (as computer use's).
func (m *Manager) startContainer(ctx context.Context, h *held) error {
	name := "visor-ws-" + h.ref.ID.String()
	uid, gid := containerUser()
	env := []string{"HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "GIT_TERMINAL_PROMPT=0"}
	netMode := container.NetworkMode("none")
	if len(h.ref.AllowedHosts) > 0 {
		proxyURL, err := m.startNetwork(ctx, h, name)
		if err != nil {
			return err
		}
		netMode = container.NetworkMode(name)
		env = append(env, "https_proxy="+proxyURL, "HTTPS_PROXY="+proxyURL, "http_proxy="+proxyURL, "HTTP_PROXY="+proxyURL)
	}
	h.allowed = h.ref.AllowedHosts
	cfg := &container.Config{
		Image: m.cfg.Image, Cmd: []string{"sleep", "infinity"}, Entrypoint: []string{},
		User: strconv.Itoa(uid) + ":" + strconv.Itoa(gid), WorkingDir: domain.MountPath, Env: env,
		Labels: m.labels(h), NetworkDisabled: len(h.ref.AllowedHosts) == 0,
	}
	pids := int64(Processes)
	host := &container.HostConfig{
		Runtime: m.cfg.Runtime, NetworkMode: netMode, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		ReadonlyRootfs: true, LogConfig: container.LogConfig{Type: "none"},
		Tmpfs: map[string]string{"/tmp": "rw,nosuid,nodev,size=256m,mode=1777"},
		Mounts: []mount.Mount{
			{Type: mount.TypeBind, Source: filesDir(h.dir), Target: domain.MountPath},
			{Type: mount.TypeBind, Source: filepath.Join(h.dir, "skills"), Target: "/skills", ReadOnly: true},
		},
		Resources: container.Resources{Memory: m.cfg.Memory, MemorySwap: m.cfg.Memory, PidsLimit: &pids, NanoCPUs: NanoCPUs},
	}
	created, err := m.cli.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fault.Newf(fault.Unavailable, err, "the workspace image %s is not on the worker (images are never pulled)", m.cfg.Image)
		}
		if cerrdefs.IsConflict(err) { // a leftover of this worker's earlier life
			_ = m.cli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
			created, err = m.cli.ContainerCreate(ctx, cfg, host, nil, nil, name)
		}
		if err != nil {
			return fault.Newf(fault.Unavailable, err, "the workspace container could not be created")
		}
	}
	h.container = created.ID
	if err := m.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return fault.Newf(fault.Unavailable, err, "the workspace container could not be started")
	}
	return nil
}

// startNetwork makes the internal network and the proxy, and returns the
// proxy URL the container's tools are given.
func (m *Manager) startNetwork(ctx context.Context, h *held, name string) (string, error) {
	nw, err := egressproxy.Open(ctx, m.cli, name, m.labels(h), h.ref.AllowedHosts, egressproxy.Config{Resolver: m.cfg.Resolver,
		DevHosts: m.cfg.DevHosts, Dialer: m.cfg.Dialer, Log: m.log.With("workspace", h.ref.ID)})
	if err != nil {
		return "", fault.Newf(fault.Unavailable, err, "the workspace network could not be made")
	}
	h.network, h.proxy = nw.ID, nw.Proxy
	return nw.URL(), nil
}

// teardown ends the sessions and removes the container, network, proxy
// and folder of h (best effort; the janitor removes what is left).
func (h *held) teardown(m *Manager) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h.mu.Lock()
	for _, s := range h.sessions {
		s.abandon()
	}
	h.mu.Unlock()
	if h.container != "" {
		if err := m.cli.ContainerRemove(ctx, h.container, container.RemoveOptions{Force: true}); err != nil && !docker.IsGone(err) {
			m.log.Warn("remove workspace container", "workspace", h.ref.ID, "err", err)
		}
	}
	if h.proxy != nil {
		h.proxy.Close()
	}
	if h.network != "" {
		if err := m.cli.NetworkRemove(ctx, h.network); err != nil && !cerrdefs.IsNotFound(err) {
			m.log.Warn("remove workspace network", "workspace", h.ref.ID, "err", err)
		}
	}
	if h.tree != nil {
		_ = h.tree.Close()
	}
	if h.mounted {
		if err := unmountQuota(filesDir(h.dir)); err != nil {
			m.log.Warn("unmount workspace filesystem", "workspace", h.ref.ID, "err", err)
		}
	}
	if h.dir != "" {
		if err := removeAll(h.dir); err != nil {
			m.log.Warn("remove workspace folder", "workspace", h.ref.ID, "err", fmt.Errorf("%s: %w", h.dir, err))
		}
	}
}
