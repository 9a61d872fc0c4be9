// Package egress is Visor's one outbound guard: every URL Visor stores to
// call later (an AI employee runtime's endpoint, a notice webhook) and every
// address it dials for a caller's URL (a client metadata document, a push)
// passes through it. CheckURL is the save-time half; a Client is the
// connect-time half, checking each address when it is dialled (after DNS,
// so rebinding does not help). Both refuse what Public says is off the
// public internet — loopback, private, link-local, carrier-grade NAT,
// benchmarking, NAT64, documentation, multicast and the other
// special-purpose ranges, in IPv4-mapped and -compatible forms too — and
// localhost names, unless the host is on an operator's development list.
// A Client follows no redirect, uses no proxy, and caps time and size.
//
// It sits below auth, web and the services so each calls the same copy.
package egress
