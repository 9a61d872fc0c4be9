// Package dbsource holds what the database source drivers (dbsource/pg,
// dbsource/mysql) share: the outbound guard every connection to a
// tenant's database goes through, and the encoding of answers under their
// caps. The drivers implement services/dbsources.Driver.
package dbsource

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/fault"
)

// Allow is the operator's allow list of private destinations: databases
// usually live on private networks, which the outbound guard otherwise
// refuses. An address in Nets, or any address of a host named in Hosts,
// may be dialled; every other address must be public.
type Allow struct {
	Nets  []netip.Prefix
	Hosts []string
}

// ParseAllow reads a comma-separated list of CIDRs (10.0.0.0/8), single
// addresses and host names.
func ParseAllow(list string) (Allow, error) {
	var a Allow
	for _, e := range strings.Split(list, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		switch {
		case e == "":
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return Allow{}, fmt.Errorf("%q is not a CIDR; want something like 10.0.0.0/8", e)
			}
			a.Nets = append(a.Nets, p.Masked())
		default:
			if ip, err := netip.ParseAddr(e); err == nil {
				a.Nets = append(a.Nets, netip.PrefixFrom(ip, ip.BitLen()))
				continue
			}
			if strings.ContainsAny(e, " :*") || len(e) > 253 {
				return Allow{}, fmt.Errorf("%q is not a host name, address or CIDR", e)
			}
			a.Hosts = append(a.Hosts, e)
		}
	}
	return a, nil
}

// DialFunc dials like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer returns the dial function for connections to host (as the source
// names it): every address it connects to is checked when it is dialled,
// after DNS, so a name that resolves somewhere private is refused unless
// allowed.
func (a Allow) Dialer(host string) DialFunc {
	named := slices.Contains(a.Hosts, strings.ToLower(host))
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if named {
			return nil
		}
		return a.check(address)
	}}
	return d.DialContext
}

func (a Allow) check(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unparseable address %q", address)
	}
	if slices.ContainsFunc(a.Nets, func(p netip.Prefix) bool { return p.Contains(ap.Addr().Unmap()) }) {
		return nil
	}
	if err := checkPublic(address); err != nil {
		return fault.Newf(fault.Forbidden, err, "the database address %s is loopback, private or otherwise special, and the operator's database network allow list (VISOR_DB_ALLOWED_NETWORKS) does not include it", ap.Addr())
	}
	return nil
}

// checkPublic is the platform's outbound address rule, kept behind one
// function so the guard's home can move without touching the drivers.
func checkPublic(address string) error { return egress.CheckPublic(address) }
