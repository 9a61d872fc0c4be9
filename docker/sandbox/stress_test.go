package sandbox_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/visorhq/visor/docker"
	domain "github.com/visorhq/visor/services/sandbox"
)

// Runs that end every way at once — exit, timeout, cancel before and
// after start — leave no container and no directory behind.
func TestRunsEndingEveryWayLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := b.program(domain.Shell, "echo hi; sleep 30", 30*time.Second)
			switch i % 4 {
			case 0:
				p.Source = "echo hi"
			case 1:
				p.Timeout = time.Second
			case 2:
				time.AfterFunc(time.Duration(rand.IntN(400))*time.Millisecond, cancel)
			case 3:
				time.AfterFunc(time.Duration(800+rand.IntN(400))*time.Millisecond, cancel)
			}
			_, _ = b.r.Run(ctx, p)
		})
	}
	wg.Wait()
	b.requireClean(t)
}

// BenchmarkTrivialPython runs `print(1)` through the runner and through
// `docker run` with the same image and flags, and reports both medians, the
// 99th percentiles and the ratio.
func BenchmarkTrivialPython(b *testing.B) {
	bb := setup(b, 0)
	var ours, cli []time.Duration
	args := []string{"run", "--rm", "--user", "1000:1000", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--read-only", "--network", "none", "--memory", "2g", "--memory-swap", "2g", "--pids-limit", "256",
		"--cpus", "1", "--tmpfs", "/tmp:rw,nosuid,nodev,noexec,size=64m", "--log-driver", "none",
		"-v", b.TempDir() + ":/workspace:ro", bb.image, "python3", "-I", "-c", "print(1)"}
	for b.Loop() {
		at := time.Now()
		res, err := bb.r.Run(context.Background(), bb.program(domain.Python, "print(1)", 0))
		if err != nil || res.Output != "1\n" {
			b.Fatalf("run: %v %q", err, res.Output)
		}
		ours = append(ours, time.Since(at))
		at = time.Now()
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil || string(out) != "1\n" {
			b.Fatalf("docker run: %v %q", err, out)
		}
		cli = append(cli, time.Since(at))
	}
	p50, p99 := percentiles(ours)
	c50, c99 := percentiles(cli)
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
	b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
	b.ReportMetric(float64(c50.Milliseconds()), "docker-run-p50-ms")
	b.ReportMetric(float64(c99.Milliseconds()), "docker-run-p99-ms")
	b.ReportMetric(float64(p50)/float64(c50), "ratio-p50")
	b.Logf("runner p50 %s p99 %s; docker run p50 %s p99 %s (n=%d)", p50, p99, c50, c99, len(ours))
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(d)
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}

// BenchmarkChurn runs b.N scripts, four at a time, and reports runs per
// second; it fails if any container or run directory is left behind. In
// "exit" every script prints and exits; in "mixed" a quarter exit, a quarter
// hit a one-second timeout and half are cancelled at a random moment.
func BenchmarkChurn(b *testing.B) {
	b.Run("exit", func(b *testing.B) { churn(b, false) })
	b.Run("mixed", func(b *testing.B) { churn(b, true) })
}

func churn(b *testing.B, mixed bool) {
	bb := setup(b, 0)
	work := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range work {
				ctx, cancel := context.WithCancel(context.Background())
				p := bb.program(domain.Python, "import time\nprint('hi')\ntime.sleep(30)", 30*time.Second)
				switch {
				case !mixed || i%4 == 0:
					p.Source = "print('hi')"
				case i%4 == 1:
					p.Timeout = time.Second
				default:
					time.AfterFunc(time.Duration(rand.IntN(1500))*time.Millisecond, cancel)
				}
				_, _ = bb.r.Run(ctx, p)
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
	bb.requireClean(b)
}

// BenchmarkCancel measures a cancel to its container's removal. Each run
// sleeps in a running container until it is cancelled; the time is taken
// from the cancel to Run's return, by which the container must be gone.
// It reports the median, the 99th percentile, the slowest, and how many
// took a second or more. "alone" cancels one run at a time; "busy" does the
// same while three other scripts start, print and exit all along, as on a
// worker with other work.
func BenchmarkCancel(b *testing.B) {
	b.Run("alone", func(b *testing.B) { cancels(b, 0) })
	b.Run("busy", func(b *testing.B) { cancels(b, 3) })
}

func cancels(b *testing.B, others int) {
	bb := setup(b, 0)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range others {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = bb.r.Run(context.Background(), bb.program(domain.Python, "print('hi')", 30*time.Second))
			}
		})
	}
	var took []time.Duration
	for b.Loop() {
		p := bb.program(domain.Shell, "sleep 60", 60*time.Second)
		_, cancel, done := bb.started(b, p)
		at := time.Now()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			b.Fatalf("a cancelled run ended with %v", err)
		}
		took = append(took, time.Since(at))
		for _, c := range bb.containers(b) {
			if c.Labels[docker.LabelID] == p.RunID.String() {
				b.Fatalf("the cancelled run's container %s outlived Run", c.ID)
			}
		}
	}
	close(stop)
	wg.Wait()
	bb.requireClean(b)
	reportCancels(b, took)
}

// reportCancels reports the median, 99th percentile and slowest of the
// cancel-to-removal times, and how many reached a second.
func reportCancels(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	over := 0
	for _, d := range took {
		if d >= time.Second {
			over++
		}
	}
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	b.ReportMetric(ms(took[min(len(took)-1, len(took)*99/100)]), "p99-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
	b.ReportMetric(float64(over), "over-1s")
}
