// Command visorload drives a running Visor's MCP endpoint over HTTP with
// many principals and a mix of requests — tools/list, tools/call, held
// subscriptions/listen streams and settings changes through the admin API —
// and then drives a bare go-sdk server holding the same tools with the same
// list and call mix, in the same run, and prints throughput, p50, p99,
// p99.9 and errors for both. See docs/benchmarks.md.
//
//	visorload -url http://localhost:8080/t/demo/mcp -operator-key $KEY -agents 50
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "visorload:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	url         string // the tenant's MCP endpoint
	operatorKey string
	agents      int
	keys        []string
	clients     int
	duration    time.Duration
	listen      int
	mix         map[string]int
	callTool    string
	callArgs    string
	timeout     time.Duration
	bare        bool
}

func parse(args []string) (config, error) {
	var c config
	var keys, mix string
	fs := flag.NewFlagSet("visorload", flag.ContinueOnError)
	fs.StringVar(&c.url, "url", "", "the tenant's MCP endpoint, e.g. http://localhost:8080/t/demo/mcp (required)")
	fs.StringVar(&c.operatorKey, "operator-key", "", "operator key of the tenant: creates the AI employees (-agents) and changes their settings")
	fs.IntVar(&c.agents, "agents", 20, "AI employees to create, each with its own key (needs -operator-key)")
	fs.StringVar(&keys, "keys", "", "comma-separated agent keys to use instead of creating employees")
	fs.IntVar(&c.clients, "clients", 16, "concurrent clients")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "how long each server is driven")
	fs.IntVar(&c.listen, "listen", 100, "subscriptions/listen streams held open during the run, spread over the principals")
	fs.StringVar(&mix, "mix", "list=70,call=25,settings=5", "weights of the request kinds (list, call, settings)")
	fs.StringVar(&c.callTool, "call-tool", "agent_status", "the tool tools/call calls")
	fs.StringVar(&c.callArgs, "call-args", "{}", "its arguments, a JSON object")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "the longest one request (or a listen stream's acknowledgment) may take")
	fs.BoolVar(&c.bare, "bare", true, "also drive a bare go-sdk server holding the same tools, for comparison")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.url == "" || !strings.Contains(c.url, "/t/") {
		return c, errors.New("-url must name a tenant's MCP endpoint (…/t/{tenant}/mcp)")
	}
	if keys != "" {
		c.keys = strings.Split(keys, ",")
	} else if c.operatorKey == "" {
		return c, errors.New("give -operator-key (to create employees) or -keys")
	}
	if c.clients < 1 || c.duration <= 0 || c.listen < 0 || c.agents < 0 || c.timeout <= 0 {
		return c, errors.New("-clients must be at least 1, -duration and -timeout positive, -agents and -listen not negative")
	}
	m, err := parseMix(mix)
	if err != nil {
		return c, err
	}
	if m["settings"] > 0 && (c.operatorKey == "" || len(c.keys) > 0) {
		return c, errors.New("settings changes need -operator-key and the employees it creates (not -keys); give -mix without settings")
	}
	c.mix = m
	return c, nil
}

func parseMix(s string) (map[string]int, error) {
	m := map[string]int{}
	total := 0
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || (k != "list" && k != "call" && k != "settings") {
			return nil, fmt.Errorf("-mix: %q is not kind=weight with kind list, call or settings", part)
		}
		m[k] = n
		total += n
	}
	if total == 0 {
		return nil, errors.New("-mix: every weight is zero")
	}
	return m, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	c, err := parse(args)
	if err != nil {
		return err
	}
	_, err = load(ctx, c, out)
	return err
}

// summary is what a run measured, for the caller to check.
type summary struct {
	visor, bare   results
	listens       int64 // acknowledged
	listenFailed  int64 // refused or never acknowledged
	listenEnded   int64 // ended by the server during the run
	notifications int64
}

// load sets up the principals, drives Visor and then the bare server, and
// prints what it measured.
func load(ctx context.Context, c config, out io.Writer) (summary, error) {
	var s summary
	v := newVisor(c)
	if len(v.keys) == 0 {
		t0 := time.Now()
		err := v.create(ctx)
		defer v.cleanup()
		if err != nil {
			return s, err
		}
		fmt.Fprintf(out, "setup: %d AI employees and their keys created in %.1f s\n", len(v.keys), time.Since(t0).Seconds())
	}
	t0 := time.Now()
	if err := v.listTools(ctx); err != nil {
		return s, err
	}
	if err := v.warm(ctx); err != nil {
		return s, err
	}
	fmt.Fprintf(out, "setup: %d tools listed; every principal's first request (key verification) done in %.1f s\n", len(v.tools), time.Since(t0).Seconds())
	t0 = time.Now()
	listens := v.openListens(ctx, c.listen)
	s.listens, s.listenFailed = listens.open(), listens.failures.Load()
	fmt.Fprintf(out, "setup: %d of %d listen streams acknowledged in %.1f s\n", s.listens, c.listen, time.Since(t0).Seconds())
	fmt.Fprintf(out, "visor: %s, %d principals, %d clients, mix %s\n", c.url, len(v.keys), c.clients, mixString(c.mix))
	s.visor = drive(ctx, c.clients, c.duration, c.mix, v.op)
	// The last changes' notifications: a change is announced after the
	// replica recomputes, which on a loaded machine can trail its answer.
	for wait := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(wait) || len(s.visor.lat["settings"]) == 0 || s.listens == 0 || listens.notified() > 0 {
			break
		}
	}
	time.Sleep(100 * time.Millisecond)
	listens.close()
	s.notifications, s.listenEnded = listens.notified(), listens.ended.Load()
	s.listenFailed = listens.failures.Load()
	fmt.Fprintf(out, "listen streams: %d list_changed notifications received; %d never acknowledged, %d ended by the server during the run\n",
		s.notifications, s.listenFailed, s.listenEnded)
	if listens.sample != nil {
		fmt.Fprintf(out, "a listen stream error: %v\n", listens.sample)
	}
	fmt.Fprintln(out)
	report(out, "visor", s.visor)
	if ctx.Err() != nil {
		return s, ctx.Err()
	}
	if !c.bare {
		return s, nil
	}
	mix := map[string]int{"list": c.mix["list"], "call": c.mix["call"]}
	if mix["list"]+mix["call"] == 0 {
		return s, nil
	}
	b, err := startBare(v.tools, c.timeout)
	if err != nil {
		return s, err
	}
	defer b.close()
	s.bare = drive(ctx, c.clients, c.duration, mix, b.op(c.callTool, c.callArgs))
	report(out, "bare go-sdk", s.bare)
	compare(out, s.visor, s.bare)
	return s, ctx.Err()
}

func mixString(m map[string]int) string {
	var parts []string
	for _, k := range []string{"list", "call", "settings"} {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	return strings.Join(parts, ",")
}
