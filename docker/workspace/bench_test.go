package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker"
	dws "github.com/visorhq/visor/docker/workspace"
	"github.com/visorhq/visor/services/fault"
	domain "github.com/visorhq/visor/services/workspace"
)

// quantiles reports p50 and p99 of ds in milliseconds.
func quantiles(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50_ms")
	b.ReportMetric(at(0.99), "p99_ms")
}

func timed(b *testing.B, f func()) []time.Duration {
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		f()
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	return ds
}

// BenchmarkWorkspace measures a workspace on one worker's Docker Engine
// and Postgres, without the plane: read_file and file_edit on a warm
// workspace, exec_command of `true` warm and cold (the open: lease,
// restore of an empty tree, container start), the restore of a 50 MB
// workspace on another worker, and many workspaces on one worker running
// `true` at once.
func BenchmarkWorkspace(b *testing.B) {
	e := setupB(b)
	ctx := context.Background()
	m := e.managerB(b, "ws-bench-"+uuid.NewString()[:8])
	_, err := m.Do(ctx, e.ref, domain.Op{Exec: &domain.ExecArgs{Cmd: "seq 1 2000 > lines.txt", WaitMS: 10000}}, true)
	require.NoError(b, err)

	b.Run("read_file", func(b *testing.B) {
		quantiles(b, timed(b, func() {
			_, err := m.Do(ctx, e.ref, domain.Op{Read: &domain.ReadArgs{Path: "lines.txt", StartLine: 100, EndLine: 200}}, false)
			require.NoError(b, err)
		}))
	})
	i := 0 // the edit flips one line back and forth, across runs
	b.Run("file_edit", func(b *testing.B) {
		quantiles(b, timed(b, func() {
			old, new := "\n1000\n", "\n1000\n"
			if i%2 == 0 {
				new = "\nthousand\n"
			} else {
				old = "\nthousand\n"
			}
			i++
			_, err := m.Do(ctx, e.ref, domain.Op{Edit: &domain.EditArgs{Action: "replace", Path: "lines.txt", OldText: old, NewText: new, ExpectedMatches: 1}}, false)
			require.NoError(b, err)
		}))
	})
	b.Run("exec_true_warm", func(b *testing.B) {
		quantiles(b, timed(b, func() {
			a, err := m.Do(ctx, e.ref, domain.Op{Exec: &domain.ExecArgs{Cmd: "true", WaitMS: 10000}}, false)
			require.NoError(b, err)
			require.True(b, *a.Session.CommandOK)
		}))
	})
	b.Run("exec_true_cold", func(b *testing.B) {
		quantiles(b, timed(b, func() {
			b.StopTimer()
			ref := e.newRef(b)
			b.StartTimer()
			a, err := m.Do(ctx, ref, domain.Op{Exec: &domain.ExecArgs{Cmd: "true", WaitMS: 10000}}, true)
			require.NoError(b, err)
			require.True(b, *a.Session.CommandOK)
			b.StopTimer()
			_, err = m.Do(ctx, ref, domain.Op{Reset: true}, false)
			require.NoError(b, err)
			b.StartTimer()
		}))
	})
	b.Run("restore_50MB_other_worker", func(b *testing.B) {
		m2 := e.managerB(b, "ws-bench-"+uuid.NewString()[:8])
		ref := e.newRef(b)
		a, err := m.Do(ctx, ref, domain.Op{Exec: &domain.ExecArgs{WaitMS: 60000, TimeoutMS: 600000,
			Cmd: `mkdir src && python3 -c "import os, base64; [open(f'src/f{i}.txt', 'w').write(base64.b64encode(os.urandom(51200)).decode()) for i in range(730)]"`}}, true)
		require.NoError(b, err)
		require.True(b, a.Session.CommandOK != nil && *a.Session.CommandOK, "%+v", a.Session)
		_, err = m.Do(ctx, ref, domain.Op{Stop: true}, false)
		require.NoError(b, err)
		ws, err := e.store.Get(ctx, ref.Tenant, ref.Agent)
		require.NoError(b, err)
		from, to := m, m2
		quantiles(b, timed(b, func() {
			a, err := to.Do(ctx, ref, domain.Op{Status: true}, true)
			require.NoError(b, err)
			require.Equal(b, to.WorkerID(), a.Status.Worker)
			b.StopTimer()
			_, err = to.Do(ctx, ref, domain.Op{Stop: true}, false)
			require.NoError(b, err)
			from, to = to, from
			b.StartTimer()
		}))
		b.ReportMetric(float64(ws.BytesUsed)/1e6, "tree_MB") // after ResetTimer, which drops metrics
		b.ReportMetric(float64(ws.SnapshotBytes)/1e6, "snapshot_MB")
	})
	const n = 12 // workspaces held at once, besides the first
	var refs []domain.Ref
	var openEach time.Duration
	b.Run("many_workspaces_exec_true", func(b *testing.B) {
		if refs == nil { // opened once for every run
			open := time.Now()
			for range n {
				ref := e.newRef(b)
				_, err := m.Do(ctx, ref, domain.Op{Status: true}, true)
				require.NoError(b, err)
				refs = append(refs, ref)
			}
			openEach = time.Since(open) / n
		}
		var mu sync.Mutex
		var ds []time.Duration
		b.ResetTimer()
		var wg sync.WaitGroup
		for i := range refs {
			wg.Add(1)
			go func(ref domain.Ref) {
				defer wg.Done()
				for range max(1, b.N/n) {
					t0 := time.Now()
					_, err := m.Do(ctx, ref, domain.Op{Exec: &domain.ExecArgs{Cmd: "true", WaitMS: 10000}}, false)
					if err != nil {
						panic(fmt.Sprint(err))
					}
					mu.Lock()
					ds = append(ds, time.Since(t0))
					mu.Unlock()
				}
			}(refs[i])
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric(float64(m.Held()), "held")
		b.ReportMetric(float64(openEach.Milliseconds()), "open_ms_each") // after ResetTimer, which drops metrics
		quantiles(b, ds)
	})
}

// BenchmarkWorkspacesHeldOnOneWorker fills one worker to its default
// limit (VISOR_WORKSPACE_MAX, 16) with workspaces of 4 MB of files each,
// checks a seventeenth is refused, and reports what holding them costs:
// the worker process's CPU and the containers' CPU and memory while they
// sit idle for 10 s, then `true` run in all of them at once.
func BenchmarkWorkspacesHeldOnOneWorker(b *testing.B) {
	const limit = 16
	e := setupB(b)
	ctx := context.Background()
	worker := "ws-bench-" + uuid.NewString()[:8]
	m := e.managerB(b, worker, func(c *dws.Config) { c.MaxWorkspaces = limit })
	var refs []domain.Ref
	open := time.Now()
	for range limit {
		ref := e.newRef(b)
		a, err := m.Do(ctx, ref, domain.Op{Exec: &domain.ExecArgs{Cmd: "head -c 3000000 /dev/urandom | base64 > data.txt", WaitMS: 30000}}, true)
		require.NoError(b, err)
		require.True(b, *a.Session.CommandOK, a.Session.Output)
		refs = append(refs, ref)
	}
	openEach := time.Since(open) / limit
	_, err := m.Do(ctx, e.newRef(b), domain.Op{Status: true}, true)
	require.True(b, fault.Is(err, fault.Unavailable), "the worker is full: %v", err)

	list, err := m.Client().ContainerList(ctx, container.ListOptions{Filters: docker.Filter(docker.Workspace, worker)})
	require.NoError(b, err)
	require.Len(b, list, limit)
	// Idle, with the worker's janitor renewing the leases every second
	// and saving what changed.
	j := dws.NewJanitor(m, time.Second)
	j.First = func(context.Context) {} // the start-up sweep would remove what this worker holds
	require.NoError(b, j.Start(ctx))
	cpu0, wall0 := processCPU(b), time.Now()
	ccpu0 := containersCPU(b, m, list)
	time.Sleep(10 * time.Second)
	workerPct := 100 * (processCPU(b) - cpu0).Seconds() / time.Since(wall0).Seconds()
	containersPct := 100 * (containersCPU(b, m, list) - ccpu0).Seconds() / time.Since(wall0).Seconds()
	var mem uint64
	for _, c := range list {
		mem += containerMemory(b, m, c.ID)
	}

	var ds []time.Duration
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		t0 := time.Now()
		for _, ref := range refs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := m.Do(ctx, ref, domain.Op{Exec: &domain.ExecArgs{Cmd: "true", WaitMS: 30000}}, false)
				if err != nil {
					panic(fmt.Sprint(err))
				}
			}()
		}
		wg.Wait()
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	j.Last = nil // the manager's cleanup lets them go
	j.Stop()
	b.ReportMetric(float64(m.Held()), "held")
	b.ReportMetric(float64(openEach.Milliseconds()), "open_ms_each")
	b.ReportMetric(workerPct, "idle_worker_cpu_%")
	b.ReportMetric(containersPct, "idle_containers_cpu_%")
	b.ReportMetric(float64(mem)/limit/1e6, "container_MB_each")
	quantiles(b, ds)
}

// processCPU is the CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// containersCPU is the CPU time the containers have used, from their
// cgroups as the engine reports them.
func containersCPU(b *testing.B, m *dws.Manager, list []container.Summary) time.Duration {
	var total time.Duration
	for _, c := range list {
		total += time.Duration(containerStats(b, m, c.ID).CPUStats.CPUUsage.TotalUsage)
	}
	return total
}

// containerMemory is a container's memory use, its tmpfs pages included.
func containerMemory(b *testing.B, m *dws.Manager, id string) uint64 {
	return containerStats(b, m, id).MemoryStats.Usage
}

func containerStats(b *testing.B, m *dws.Manager, id string) container.StatsResponse {
	res, err := m.Client().ContainerStatsOneShot(context.Background(), id)
	require.NoError(b, err)
	defer res.Body.Close()
	var st container.StatsResponse
	require.NoError(b, json.NewDecoder(res.Body).Decode(&st))
	return st
}
