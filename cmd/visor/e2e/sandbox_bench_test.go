package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/internal/testsignal"
)

// BenchmarkExecuteProgram measures execute_program end to end: an MCP
// client calls serve, which hands the run over the worker plane to a
// sandbox worker, which runs it on the Docker Engine.
//
// "trivial" runs print(1) b.N times one after another and, as many times,
// `docker run` of the same image with the same limits; it reports both
// p50/p99 and their ratio. "churn" runs b.N scripts four at a time — a
// quarter exit, a quarter hit a one-second timeout, half are cancelled by
// the client at a random moment — reports runs per second, and fails if a
// container or a run directory is left behind. "exit" is churn with every
// script exiting at once: the throughput on this machine. "cancel" starts
// a sleeping script b.N times, one at a time, cancels the client's call
// once its container runs, and reports the time from the cancel until the
// container is gone from the engine (median, 99th percentile, slowest, and
// how many took a second or more).
func BenchmarkExecuteProgram(b *testing.B) {
	tmp := b.TempDir()
	s := newSandboxWorld(b, "TMPDIR="+tmp, "VISOR_SANDBOX_MAX_RUNS=4", "VISOR_SANDBOX_MAX_RUNS_PER_TENANT=4", "VISOR_SANDBOX_MAX_RUNS_PER_EMPLOYEE=4")
	b.Run("trivial", func(b *testing.B) { trivial(b, s) })
	b.Run("cancel", func(b *testing.B) { cancelMCP(b, s) })
	b.Run("churn", func(b *testing.B) { churnMCP(b, s, tmp, true) })
	b.Run("exit", func(b *testing.B) { churnMCP(b, s, tmp, false) })
}

func trivial(b *testing.B, s *sandboxWorld) {
	ctx := context.Background()
	var ours, cli []time.Duration
	dir := b.TempDir()
	args := []string{"run", "--rm", "--user", "1000:1000", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--read-only", "--network", "none", "--memory", "2g", "--memory-swap", "2g", "--pids-limit", "256",
		"--cpus", "1", "--tmpfs", "/tmp:rw,nosuid,nodev,noexec,size=64m", "--log-driver", "none",
		"-v", dir + ":/workspace:ro", s.image, "python3", "-I", "-c", "print(1)"}
	for b.Loop() {
		at := time.Now()
		res, err := s.run(ctx, b, "python", "print(1)", false)
		if err != nil || res.IsError || !strings.HasSuffix(text(res), "\n1\n") {
			b.Fatalf("execute_program: %v %v", err, res)
		}
		ours = append(ours, time.Since(at))
		at = time.Now()
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil || string(out) != "1\n" {
			b.Fatalf("docker run: %v %q", err, out)
		}
		cli = append(cli, time.Since(at))
	}
	p50, p99 := pct(ours)
	c50, c99 := pct(cli)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(c50), "docker-run-p50-ms")
	b.ReportMetric(ms(c99), "docker-run-p99-ms")
	b.ReportMetric(float64(p50)/float64(c50), "ratio-p50")
	b.ReportMetric(float64(p99)/float64(c99), "ratio-p99")
}

func cancelMCP(b *testing.B, s *sandboxWorld) {
	cs := s.connect(b, "")
	// The engine's API directly: the CLI's own start-up would blur the time.
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	mine := container.ListOptions{All: true, Filters: docker.Filter(docker.Sandbox, s.workerID)}
	list := func() []container.Summary {
		l, err := cli.ContainerList(context.Background(), mine)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	// until polls the engine every 5 ms and fails after 30 s.
	until := func(what string, ok func() bool) { testsignal.Until(b, 30*time.Second, 5*time.Millisecond, what, ok) }
	var took []time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := s.runOn(ctx, cs, "sh", "sleep 60", false); errc <- err }()
		until("the container never started", func() bool { l := list(); return len(l) == 1 && l[0].State == "running" })
		at := time.Now()
		cancel()
		until("the container outlived the cancel by 30 s", func() bool { return len(list()) == 0 })
		took = append(took, time.Since(at))
		if err := <-errc; err == nil {
			b.Fatal("a cancelled call succeeded")
		}
	}
	p50, p99 := pct(took) // sorts took
	over := 0
	for _, d := range took {
		if d >= time.Second {
			over++
		}
	}
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
	b.ReportMetric(float64(over), "over-1s")
}

func pct(d []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(d)
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}

func churnMCP(b *testing.B, s *sandboxWorld, tmp string, mixed bool) {
	sessions := make([]*sdk.ClientSession, 4)
	for i := range sessions {
		sessions[i] = s.connect(b, "")
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range work {
				ctx, cancel := context.WithCancel(context.Background())
				code, args := "print('hi')", map[string]any{"language": "python"}
				switch {
				case !mixed || i%4 == 0:
				case i%4 == 1:
					code, args["timeout_seconds"] = "import time\ntime.sleep(30)", 1
				default:
					code = "import time\nprint('hi')\ntime.sleep(30)"
					time.AfterFunc(time.Duration(rand.IntN(1500))*time.Millisecond, cancel)
				}
				args["code"] = code
				_, _ = sessions[w].CallTool(ctx, &sdk.CallToolParams{Name: "execute_program", Arguments: args})
				cancel()
			}
		})
	}
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	// A cancelled run's removal finishes on the worker just after the
	// client's call returned.
	var left, dirs int
	testsignal.Until(b, 10*time.Second, 100*time.Millisecond, "no container or run directory left behind", func() bool {
		left = len(s.containers(b))
		entries, err := os.ReadDir(tmp)
		if err != nil {
			b.Fatal(err)
		}
		dirs = 0
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "visor-sandbox-") {
				dirs++
			}
		}
		if left+dirs > 0 {
			b.Logf("left behind so far: %d containers, %d run directories", left, dirs)
		}
		return left == 0 && dirs == 0
	})
	b.ReportMetric(0, "left-behind")
}
