package pgtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ServerCPU returns the CPU time (user and system) the Postgres server's
// processes serving pool's database have used so far: its backends and the
// server's background processes (the WAL writer, the checkpointer and the
// like, shared with every other database), as pg_stat_activity lists them,
// read from /proc. It works only when the server
// runs on this machine and its processes are readable (as with the
// server tests use here); otherwise ok is false. Benchmarks take it before
// and after to report the database's share of a request's cost, which a
// profile of the Go process cannot show. Processes that exit between two
// readings (a connection closed) take their time with them, so take both
// while the connections of interest are open.
func ServerCPU(ctx context.Context, pool *pgxpool.Pool) (cpu time.Duration, ok bool) {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() OR datname IS NULL`)
	if err != nil {
		return 0, false
	}
	defer rows.Close()
	var ticks int64
	for rows.Next() {
		var pid int32
		if rows.Scan(&pid) != nil {
			return 0, false
		}
		t, err := procTicks(pid)
		if err != nil {
			return 0, false
		}
		ticks += t
	}
	if rows.Err() != nil {
		return 0, false
	}
	// Linux reports these in clock ticks of 1/100 s (USER_HZ) on every
	// platform Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond, true
}

// procTicks is utime+stime of pid from /proc/pid/stat.
func procTicks(pid int32) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing one. utime and stime are fields 14 and 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	return u + st, nil
}
