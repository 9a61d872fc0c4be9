package egressproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// Config is how a worker pins and dials allowed hosts.
type Config struct {
	// Resolver pins allowed hosts (default: the system's).
	Resolver Resolver
	// DevHosts are development hosts (lower case) whose pinned addresses
	// may be private; every other host keeps only public ones.
	DevHosts []string
	// Dialer opens the proxy's upstream connections (default: net).
	Dialer Dialer
	Log    *slog.Logger
}

// Network is an internal Docker network and, when hosts are allowed, the
// egress proxy on its gateway.
type Network struct {
	ID      string
	Gateway string
	Proxy   *Proxy // nil when no host is allowed
}

// Open makes an internal network named name (labelled; a leftover of the
// same name is removed first) and, when allowed names hosts, starts the
// proxy for them on the network's gateway. On failure it removes what it
// made.
func Open(ctx context.Context, cli *client.Client, name string, labels map[string]string, allowed []string, cfg Config) (_ *Network, err error) {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	_ = cli.NetworkRemove(ctx, name) // a leftover of this worker's earlier life
	nw, err := cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Internal: true, Labels: labels,
		Options: map[string]string{"com.docker.network.bridge.enable_icc": "false"}})
	if err != nil {
		return nil, fmt.Errorf("create network %s: %w", name, err)
	}
	n := &Network{ID: nw.ID}
	defer func() {
		if err != nil {
			_ = n.Close(context.WithoutCancel(ctx), cli)
		}
	}()
	info, err := cli.NetworkInspect(ctx, nw.ID, network.InspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect network %s: %w", name, err)
	}
	for _, c := range info.IPAM.Config {
		if ip := net.ParseIP(c.Gateway); ip != nil && ip.To4() != nil {
			n.Gateway = c.Gateway
		}
	}
	if n.Gateway == "" {
		return nil, errors.New("network " + name + " has no IPv4 gateway")
	}
	if len(allowed) == 0 {
		return n, nil
	}
	pinned, failed := Pin(ctx, cfg.Resolver, allowed, cfg.DevHosts)
	if len(failed) > 0 {
		cfg.Log.Info("allowed hosts that did not resolve", "network", name, "hosts", failed)
	}
	if n.Proxy, err = StartProxy(net.JoinHostPort(n.Gateway, "0"), pinned, cfg.Dialer, cfg.Log); err != nil {
		return nil, err
	}
	return n, nil
}

// URL is the proxy's URL for the container ("" without a proxy).
func (n *Network) URL() string {
	if n.Proxy == nil {
		return ""
	}
	return "http://" + n.Proxy.Addr()
}

// Close stops the proxy and removes the network (its containers must be
// gone first).
func (n *Network) Close(ctx context.Context, cli *client.Client) error {
	if n.Proxy != nil {
		n.Proxy.Close()
	}
	if err := cli.NetworkRemove(ctx, n.ID); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove network: %w", err)
	}
	return nil
}
