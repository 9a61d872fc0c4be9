package workspace_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

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
