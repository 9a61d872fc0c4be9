package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/computer/browser"
)

// ComputerConfig is computer use's part of Config.
type ComputerConfig struct {
	Image     string                // VISOR_COMPUTER_IMAGE: the browser image; empty: no sessions here
	DevHosts  map[string]netip.Addr // VISOR_COMPUTER_DEV_HOSTS: host=address pins used instead of DNS
	TrustSPKI []string              // VISOR_COMPUTER_DEV_TRUST_SPKI: certificate keys Chromium accepts unverified
}

func loadComputerConfig(get func(string) string, bad func(name, format string, args ...any)) ComputerConfig {
	c := ComputerConfig{Image: get("VISOR_COMPUTER_IMAGE")}
	for _, pair := range strings.Split(get("VISOR_COMPUTER_DEV_HOSTS"), ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		host, ip, ok := strings.Cut(pair, "=")
		addr, err := netip.ParseAddr(ip)
		if !ok || err != nil || host == "" {
			bad("VISOR_COMPUTER_DEV_HOSTS", "%q must be host=address, like shop.test=127.0.0.2", pair)
			continue
		}
		if c.DevHosts == nil {
			c.DevHosts = map[string]netip.Addr{}
		}
		c.DevHosts[strings.ToLower(host)] = addr
	}
	for _, k := range strings.Split(get("VISOR_COMPUTER_DEV_TRUST_SPKI"), ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(k); err != nil || len(b) != 32 {
			bad("VISOR_COMPUTER_DEV_TRUST_SPKI", "%q must be the base64 SHA-256 of a certificate's public key", k)
			continue
		}
		c.TrustSPKI = append(c.TrustSPKI, k)
	}
	return c
}

// devResolver answers from VISOR_COMPUTER_DEV_HOSTS, and from DNS for other
// hosts.
type devResolver map[string]netip.Addr

func (r devResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{a}, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}

// newComputer builds computer use on Postgres, with no browser driver:
// sessions answer that no worker runs them; workspaces work.
func (a *app) newComputer() *computer.Service {
	store := a.stores.computer
	return computer.NewService(store, store, nil, nil, a.log.With("area", "computer"))
}

// startBrowsers lets this process run browser sessions itself when
// VISOR_COMPUTER_IMAGE names the browser image: it starts the janitor of
// its sessions and gives computer use a driver. Call it before edges.
func (a *app) startBrowsers(ctx context.Context) error {
	c := a.cfg.Computer
	if c.Image == "" {
		return nil
	}
	host, _ := os.Hostname()
	cfg := browser.Config{Image: c.Image, WorkerID: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])}
	if len(c.DevHosts) > 0 {
		cfg.Resolver = devResolver(c.DevHosts)
	}
	if len(c.TrustSPKI) > 0 {
		cfg.ExtraFlags = []string{"--ignore-certificate-errors-spki-list=" + strings.Join(c.TrustSPKI, ",")}
	}
	m, err := browser.New(cfg, a.log.With("area", "browser"))
	if err != nil {
		return err
	}
	if err := a.start(ctx, &browser.Janitor{M: m}); err != nil {
		return err
	}
	store := a.stores.computer
	a.computer = computer.NewService(store, store, m, nil, a.log.With("area", "computer"))
	return nil
}
