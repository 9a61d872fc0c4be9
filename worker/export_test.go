package worker

import "context"

// Freeze makes r look killed to its peers: its heartbeat stops and its
// row stays behind, going stale; it fetches no more jobs; the jobs it is
// running keep running until Stop.
func (r *Runner) Freeze() {
	r.beat.frozen.Store(true)
	for _, p := range r.planes {
		p.Freeze()
	}
	r.beating()
	<-r.beaten
	// Stop stops fetching at once and returns when r.Stop cancels the
	// running jobs, long after the peers resumed them.
	go func() { _ = r.client.Stop(context.Background()) }()
}
