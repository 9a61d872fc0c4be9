package main

import (
	"strconv"
	"syscall"
)

// ScaleConfig is how much one process takes on: the streams and
// connections a serve replica holds, the worker's database pool and how
// many jobs of each queue it runs at once.
type ScaleConfig struct {
	MaxStreams                  int   // VISOR_MCP_MAX_STREAMS (0 in the variable: derived from the open-file limit)
	StreamsPerCred              int   // VISOR_MCP_MAX_STREAMS_PER_CREDENTIAL
	MaxConns                    int   // VISOR_HTTP_MAX_CONNECTIONS (0 in the variable: derived from the open-file limit)
	H2C                         bool  // VISOR_HTTP_H2C: also serve HTTP/2 without TLS
	WorkerDBPool                int32 // VISOR_WORKER_DB_POOL
	RoundsConcurrency           int   // VISOR_WORKER_ROUNDS_CONCURRENCY
	ResponsibilitiesConcurrency int   // VISOR_WORKER_RESPONSIBILITIES_CONCURRENCY
	OpenFiles                   int   // the process's open-file limit when read (0: unknown)
}

func loadScaleConfig(get func(string) string, bad func(name, format string, args ...any)) ScaleConfig {
	num := func(name string, lo, hi int) int {
		n, err := strconv.Atoi(get(name))
		if err != nil || n < lo || n > hi {
			bad(name, "%q must be a number %d-%d", get(name), lo, hi)
		}
		return n
	}
	c := ScaleConfig{
		MaxStreams:                  num("VISOR_MCP_MAX_STREAMS", 0, 10_000_000),
		StreamsPerCred:              num("VISOR_MCP_MAX_STREAMS_PER_CREDENTIAL", 0, 10_000_000),
		MaxConns:                    num("VISOR_HTTP_MAX_CONNECTIONS", 0, 10_000_000),
		WorkerDBPool:                int32(num("VISOR_WORKER_DB_POOL", 2, 1000)),
		RoundsConcurrency:           num("VISOR_WORKER_ROUNDS_CONCURRENCY", 1, 10_000),
		ResponsibilitiesConcurrency: num("VISOR_WORKER_RESPONSIBILITIES_CONCURRENCY", 1, 10_000),
		OpenFiles:                   openFileLimit(),
	}
	h2c, err := strconv.ParseBool(get("VISOR_HTTP_H2C"))
	if err != nil {
		bad("VISOR_HTTP_H2C", "%q must be true or false", get("VISOR_HTTP_H2C"))
	}
	c.H2C = h2c
	conns, streams := fdBudget(c.OpenFiles)
	if c.MaxConns == 0 {
		c.MaxConns = conns
	}
	if c.MaxStreams == 0 {
		c.MaxStreams = min(streams, c.MaxConns)
	}
	// Over HTTP/2 streams share connections, so they may outnumber them.
	if c.MaxConns > 0 && c.MaxStreams >= c.MaxConns && !c.H2C {
		bad("VISOR_MCP_MAX_STREAMS", "%d must be below VISOR_HTTP_MAX_CONNECTIONS (%d), so tools/call and probes still get connections at the limit",
			c.MaxStreams, c.MaxConns)
	}
	return c
}

// fdBudget splits n open descriptors: connections get all but a reserve
// for Postgres, Redis and files (an eighth, at most 128), and streams all
// but a tenth of n (at least 256, at most half) of the connections, so a
// replica full of streams still answers calls and probes. Unknown (0):
// no cap.
func fdBudget(n int) (conns, streams int) {
	if n <= 0 {
		return 0, 0
	}
	conns = n - min(128, n/8)
	return conns, conns - min(max(256, n/10), conns/2)
}

// openFileLimit returns the process's open-file limit (Go raises the soft
// limit to the hard one at start), or 0 when it cannot be read or is
// unlimited.
func openFileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
