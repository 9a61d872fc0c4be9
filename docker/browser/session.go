package browser

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/egressproxy"
	"github.com/visorhq/visor/services/computer"
)

// session is one container this worker holds, and the browser tab in it.
type session struct {
	spec      computer.Spec
	network   string
	container string
	proxy     *egressproxy.Proxy
	dir       string // the mounted workspace copy, "" when none
	cancel    context.CancelFunc
	tab       context.Context // chromedp's context of the page

	mu       sync.Mutex // one action at a time
	lastUsed time.Time
}

func (m *Manager) labels(spec computer.Spec) map[string]string {
	return docker.Labels(docker.Browser, m.cfg.WorkerID, spec.Tenant.String(), spec.Session.String())
}

// create makes the network, proxy, files and container of a session and
// connects to its browser; on any failure it removes what it made.
func (m *Manager) create(ctx context.Context, spec computer.Spec) (_ *session, err error) {
	s := &session{spec: spec, lastUsed: time.Now()}
	defer func() {
		if err != nil {
			if terr := s.teardown(context.WithoutCancel(ctx), m.cli); terr != nil {
				m.log.Warn("clean up a session that failed to start", "session", spec.Session, "err", terr)
			}
		}
	}()
	name := "visor-cu-" + spec.Session.String()
	nw, err := egressproxy.Open(ctx, m.cli, name, m.labels(spec), spec.Allowed, egressproxy.Config{Resolver: m.cfg.Resolver,
		DevHosts: m.cfg.DevHosts, Dialer: m.cfg.Dialer, Log: m.log.With("session", spec.Session)})
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return nil, unavailable("the Docker Engine cannot be reached", err)
		}
		return nil, fmt.Errorf("session network: %w", err)
	}
	s.network, s.proxy = nw.ID, nw.Proxy
	flags := append([]string{fmt.Sprintf("--window-size=%d,%d", spec.Width, spec.Height)}, m.cfg.ExtraFlags...)
	if s.proxy != nil {
		// Every request goes to the proxy, loopback included.
		flags = append(flags, "--proxy-server="+nw.URL(), "--proxy-bypass-list=<-loopback>")
	}
	mounts, err := s.writeFiles(m.cfg.TempDir, m.dirPrefix(m.cfg.WorkerID))
	if err != nil {
		return nil, err
	}
	if spec.TreeDir != "" {
		// The employee's live workspace tree, lent by the workspace
		// manager of this process: the same folder, read-only.
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: spec.TreeDir, Target: computer.TreePath, ReadOnly: true})
	}
	cfg := &container.Config{Image: m.cfg.Image, Cmd: flags, Labels: m.labels(spec), User: "1000:1000"}
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(name), ReadonlyRootfs: true, CapDrop: []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"}, ShmSize: ShmSize, Mounts: mounts,
		Tmpfs:     map[string]string{"/tmp": "size=512m,mode=1777"},
		Resources: container.Resources{Memory: Memory, MemorySwap: Memory, PidsLimit: ptr(int64(Processes)), NanoCPUs: NanoCPUs},
	}
	created, err := m.cli.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, unavailable(fmt.Sprintf("the browser image %s is not on the worker (images are never pulled)", m.cfg.Image), err)
		}
		return nil, fmt.Errorf("create session container: %w", err)
	}
	s.container = created.ID
	if err := m.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("start session container: %w", err)
	}
	ip, err := m.address(ctx, created.ID)
	if err != nil {
		return nil, err
	}
	return s, s.connect(ctx, ip)
}

func ptr[T any](v T) *T { return &v }

func (m *Manager) address(ctx context.Context, id string) (string, error) {
	info, err := m.cli.ContainerInspect(ctx, id)
	if err != nil {
		return "", fmt.Errorf("inspect session container: %w", err)
	}
	for _, n := range info.NetworkSettings.Networks {
		if n.IPAddress != "" {
			return n.IPAddress, nil
		}
	}
	return "", errors.New("the session container has no address")
}

// writeFiles copies the attached workspace into a private directory that
// only root can read, mounted read-only at computer.MountPath.
func (s *session) writeFiles(tempDir, prefix string) ([]mount.Mount, error) {
	if s.spec.Files == nil {
		return nil, nil
	}
	dir, err := os.MkdirTemp(tempDir, prefix)
	if err != nil {
		return nil, fmt.Errorf("workspace copy: %w", err)
	}
	s.dir = dir
	root := filepath.Join(dir, "files")
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, err
	}
	for _, f := range s.spec.Files {
		if computer.CheckPath(f.Path) != nil {
			continue // never written where a bad path could lead
		}
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, f.Content, 0o600); err != nil {
			return nil, err
		}
	}
	return []mount.Mount{{Type: mount.TypeBind, Source: root, Target: computer.MountPath, ReadOnly: true}}, nil
}

// connect waits for the browser's DevTools endpoint and opens the one tab
// the session drives, closing the start page's.
func (s *session) connect(ctx context.Context, ip string) error {
	base := "http://" + net.JoinHostPort(ip, strconv.Itoa(9223))
	deadline := time.Now().Add(ReadyTimeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/json/version", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the browser did not answer on its DevTools port within %s: %w", ReadyTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	alloc, cancelAlloc := remote.NewAllocator(context.Background(), "ws://"+net.JoinHostPort(ip, "9223")+"/")
	tab, cancelTab := chromedp.NewContext(alloc)
	s.cancel = func() { cancelTab(); cancelAlloc() }
	s.tab = tab
	// The first call connects, and the connection lives as long as the
	// context of that call: it gets the tab's, with no deadline; the
	// DevTools port already answered, so it does not hang.
	stop := context.AfterFunc(ctx, cancelTab)
	defer stop()
	_, err := chromedp.Call(tab, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(s.spec.Width), Height: int64(s.spec.Height), DeviceScaleFactor: 1})
	if err != nil {
		return fmt.Errorf("open the session tab: %w", err)
	}
	rctx, cancel := context.WithTimeout(tab, ReadyTimeout)
	defer cancel()
	own := chromedp.FromContext(tab).Target.TargetID
	infos, err := chromedp.Targets(rctx)
	if err != nil {
		return fmt.Errorf("list browser targets: %w", err)
	}
	for _, t := range infos {
		if t.Type == "page" && t.TargetID != own {
			if _, err := chromedp.CallBrowser(rctx, target.CloseTarget, target.CloseTargetParams{TargetID: t.TargetID}); err != nil {
				return fmt.Errorf("close the start page: %w", err)
			}
		}
	}
	return nil
}

// alive reports whether the session's container still runs.
func (s *session) alive(ctx context.Context, cli *client.Client) bool {
	info, err := cli.ContainerInspect(ctx, s.container)
	return err == nil && info.State != nil && info.State.Running
}

// teardown removes everything the session made; safe on a partial one.
func (s *session) teardown(ctx context.Context, cli *client.Client) error {
	if s.cancel != nil {
		s.cancel()
	}
	if s.proxy != nil {
		s.proxy.Close()
	}
	var errs []error
	if s.container != "" {
		if err := cli.ContainerRemove(ctx, s.container, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !docker.IsGone(err) {
			errs = append(errs, fmt.Errorf("remove session container: %w", err))
		}
	}
	if s.network != "" {
		if err := cli.NetworkRemove(ctx, s.network); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove session network: %w", err))
		}
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	if s.spec.TreeRelease != nil {
		s.spec.TreeRelease() // the container that mounted the tree is gone
	}
	return errors.Join(errs...)
}
