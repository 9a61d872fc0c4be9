package e2e

import (
	"context"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
)

// idleStreams is how many streams BenchmarkLiveIdleStreamMemory opens:
// VISOR_BENCH_STREAMS, 10,000 if unset.
func idleStreams() int {
	if v, err := strconv.Atoi(os.Getenv("VISOR_BENCH_STREAMS")); err == nil && v >= 100 {
		return v
	}
	return 10000
}

// raiseFileLimit raises this process's open-file limit to at least n, hard
// limit included when the process may (root); the replicas it starts
// inherit it.
func raiseFileLimit(tb testing.TB, n int) {
	tb.Helper()
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		tb.Fatalf("read the open-file limit: %v", err)
	}
	if r.Cur >= uint64(n) {
		return
	}
	want := syscall.Rlimit{Cur: uint64(n), Max: max(r.Max, uint64(n))}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		tb.Fatalf("raise the open-file limit to %d (now %d, hard %d): %v", n, r.Cur, r.Max, err)
	}
}

// spreadDialer dials from a rotating source address in 127.0.0.0/8, so
// that more streams than one address has ephemeral ports can reach one
// replica over loopback.
func spreadDialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	var n atomic.Uint32
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		i := n.Add(1)
		src := net.IPv4(127, 1, byte(i>>8%250), byte(i%250+1))
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}}
		return d.DialContext(ctx, network, addr)
	}
}
