package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
)

// results are the latencies and errors of one run, by request kind.
type results struct {
	elapsed time.Duration
	lat     map[string][]time.Duration
	errs    map[string]int
	sample  map[string]error // one error of each kind, to show
}

// drive runs op from clients goroutines, each request's kind drawn by the
// weights in mix (a client's first request excepted, see below). Clients start requests for d; a request still in flight
// at the end is waited for and counted (each is bounded by the client's own
// timeout), so a run on a slow server still reports what completed, and
// elapsed is the time until the last one ended.
func drive(ctx context.Context, clients int, d time.Duration, mix map[string]int, op func(context.Context, string) error) results {
	var kinds, distinct []string
	for k, w := range mix {
		for range w {
			kinds = append(kinds, k)
		}
		if w > 0 {
			distinct = append(distinct, k)
		}
	}
	sort.Strings(distinct)
	res := results{lat: map[string][]time.Duration{}, errs: map[string]int{}, sample: map[string]error{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := map[string][]time.Duration{}
			errs := map[string]int{}
			last := map[string]error{}
			// Each client's first request is of the next kind in turn, so
			// with as many clients as kinds every kind is measured even in
			// a run too short or too slow for the random draw to reach it.
			first := true
			for ctx.Err() == nil && time.Now().Before(end) {
				k := kinds[rand.IntN(len(kinds))]
				if first {
					k, first = distinct[c%len(distinct)], false
				}
				t0 := time.Now()
				err := op(ctx, k)
				if ctx.Err() != nil {
					break // interrupted: not counted
				}
				if err != nil {
					errs[k]++
					last[k] = err
					continue
				}
				lat[k] = append(lat[k], time.Since(t0))
			}
			mu.Lock()
			defer mu.Unlock()
			for k, l := range lat {
				res.lat[k] = append(res.lat[k], l...)
			}
			for k, n := range errs {
				res.errs[k] += n
				res.sample[k] = last[k]
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

func (r results) kinds() []string {
	var ks []string
	for k := range r.lat {
		ks = append(ks, k)
	}
	for k := range r.errs {
		if _, ok := r.lat[k]; !ok {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

func (r results) rate(k string) float64 { return float64(len(r.lat[k])) / r.elapsed.Seconds() }

// failed is the number of failed requests of every kind.
func (r results) failed() (n int) {
	for _, e := range r.errs {
		n += e
	}
	return n
}

func quantile(l []time.Duration, q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	l = slices.Clone(l)
	slices.Sort(l)
	return l[min(len(l)-1, int(float64(len(l))*q))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func report(out io.Writer, name string, r results) {
	fmt.Fprintf(out, "%s, %.1f s\n| request | ok | req/s | p50 | p99 | p99.9 | errors |\n|---|---|---|---|---|---|---|\n", name, r.elapsed.Seconds())
	for _, k := range r.kinds() {
		l := r.lat[k]
		fmt.Fprintf(out, "| %s | %d | %.0f | %s | %s | %s | %d |\n", k, len(l), r.rate(k), ms(quantile(l, .5)), ms(quantile(l, .99)), ms(quantile(l, .999)), r.errs[k])
	}
	for _, k := range r.kinds() {
		if err := r.sample[k]; err != nil {
			fmt.Fprintf(out, "a %s error: %v\n", k, err)
		}
	}
	fmt.Fprintln(out)
}

// compare prints Visor's rate and p50 against the bare server's for each
// kind both ran. The mixes differ by the settings changes, so rates are
// per kind.
func compare(out io.Writer, v, b results) {
	fmt.Fprintf(out, "| request | visor req/s ÷ bare req/s | visor p50 − bare p50 |\n|---|---|---|\n")
	for _, k := range []string{"list", "call"} {
		if len(v.lat[k]) == 0 || len(b.lat[k]) == 0 {
			continue
		}
		fmt.Fprintf(out, "| %s | %.2f× | %s |\n", k, v.rate(k)/b.rate(k), ms(quantile(v.lat[k], .5)-quantile(b.lat[k], .5)))
	}
}
