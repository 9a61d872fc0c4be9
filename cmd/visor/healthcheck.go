package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

func healthcheckCommand() command {
	return command{
		name: "healthcheck", args: "[-worker] [-ready] [-url URL] [-timeout 5s]",
		summary: "probe a running serve or worker; exit 0 when healthy (container HEALTHCHECK)",
		detail: `Asks the local ` + "`visor serve`" + ` (VISOR_HTTP_ADDR) or, with -worker, the local
` + "`visor worker`" + ` (VISOR_WORKER_HTTP_ADDR) for /healthz, or /readyz with -ready, and
exits 0 when it answers 200, 1 otherwise. It needs no shell or curl, so it works
as the HEALTHCHECK of the distroless image:
  HEALTHCHECK CMD ["/usr/local/bin/visor", "healthcheck", "-ready"]
It reads the same environment as the process it probes; -url overrides the target.`,
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			worker := fs.Bool("worker", false, "probe `visor worker` on VISOR_WORKER_HTTP_ADDR instead of `visor serve`")
			ready := fs.Bool("ready", false, "probe /readyz (Postgres and Redis answer, not shutting down) instead of /healthz")
			target := fs.String("url", "", "probe this URL instead (http or https)")
			timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
			if err := parse(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				fmt.Fprintf(e.stderr, "visor healthcheck: unexpected argument %q\n", fs.Arg(0))
				return errUsage
			}
			u := *target
			if u == "" {
				var err error
				if u, err = probeURL(e.getenv, *worker, *ready); err != nil {
					return err
				}
			} else if err := checkURL(u, "http", "https"); err != nil {
				return fmt.Errorf("-url: %v", err)
			}
			ctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			if err := probe(ctx, u); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, "ok")
			return nil
		},
	}
}

// probeURL is where the local process listens: the port of its listen
// address on the loopback interface when it listens on all of them.
func probeURL(getenv func(string) string, worker, ready bool) (string, error) {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return "", err
	}
	addr, name := cfg.HTTPAddr, "VISOR_HTTP_ADDR"
	if worker {
		addr, name = cfg.WorkerHTTPAddr, "VISOR_WORKER_HTTP_ADDR"
		if addr == "" {
			return "", errors.New("VISOR_WORKER_HTTP_ADDR is not set, so the worker serves no health endpoint; set it (e.g. :9090) for the worker and for this check")
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s: %q is not host:port", name, addr)
	}
	if port == "0" {
		return "", fmt.Errorf("%s: port 0 is picked at random when the process starts; give -url", name)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	path := "/healthz"
	if ready {
		path = "/readyz"
	}
	return (&url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: path}).String(), nil
}

// probe GETs u and wants a 200.
func probe(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("unhealthy: %v", err)
	}
	// A redirect is an answer, and not the one wanted: do not follow it.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("unhealthy: GET %s: %v", u, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: GET %s: %s %s", u, res.Status, body)
	}
	return nil
}
