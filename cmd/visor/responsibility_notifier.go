package main

import (
	"net"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/responsibilities"
)

// responsibilityNotifier is how questions of responsibilities are pushed: through
// the same egress guard as round deliveries (VISOR_WEBHOOK_DEV_HOSTS,
// VISOR_WEBHOOK_CA_FILE, VISOR_WEBHOOK_TIMEOUT), with answer links on the
// public base URL.
func (a *app) responsibilityNotifier() responsibilities.Notifier {
	rc := a.cfg.Rounds
	base := a.cfg.BaseURL
	if base == "" {
		_, port, _ := net.SplitHostPort(a.cfg.HTTPAddr)
		base = "http://" + net.JoinHostPort("localhost", port)
	}
	return responsibilities.Notifier{
		HTTP:     egress.New(egress.Config{AllowPrivateHosts: rc.DevHosts, RootCAs: rc.RootCAs, Timeout: rc.Timeout}),
		CheckURL: func(raw string) (string, error) { return egress.CheckURL(raw, rc.DevHosts) },
		BaseURL:  base,
	}
}
