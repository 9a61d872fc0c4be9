package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
)

// AuditTailer streams a tenant's new audit rows as server-sent events, for
// the dashboard's live tail. It bounds how many tails each tenant holds
// open on this replica.
type AuditTailer struct {
	Tail audit.Tail
	// MaxPerTenant bounds one tenant's open tails on this replica;
	// default 16.
	MaxPerTenant int
	// Heartbeat is how often a quiet tail sends a comment so proxies keep
	// it open; default 15s.
	Heartbeat time.Duration

	mu   sync.Mutex
	open map[uuid.UUID]int
}

// errTooManyTails is the refusal past MaxPerTenant.
var errTooManyTails = fault.New(fault.RateLimited, "too many live audit tails are open for this tenant; close one and retry")

// Serve writes, until ctx ends, every new row of tenantID matching f that
// is at or after since as an event "audit" whose data is an AuditEvent and
// whose id is the row's time (a reconnecting EventSource sends it back as
// Last-Event-ID, see SinceOf), an event "skipped" when a burst was too
// large to show whole, and a comment every Heartbeat. It refuses with
// fault.RateLimited, before writing anything, when the tenant holds
// MaxPerTenant tails already.
func (a *AuditTailer) Serve(ctx context.Context, w http.ResponseWriter, tenantID uuid.UUID, f audit.Filter, since time.Time) error {
	return a.ServeEncoded(ctx, w, tenantID, f, since, func(e audit.Entry) ([]byte, error) { return json.Marshal(auditOut(e)) })
}

// ServeEncoded is Serve with each event's data made by encode, which must
// return one line (JSON): the dashboard sends its rows rendered.
func (a *AuditTailer) ServeEncoded(ctx context.Context, w http.ResponseWriter, tenantID uuid.UUID, f audit.Filter, since time.Time,
	encode func(audit.Entry) ([]byte, error)) error {
	if !a.take(tenantID) {
		return errTooManyTails
	}
	defer a.release(tenantID)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	flush()
	heartbeat := a.Heartbeat
	if heartbeat <= 0 {
		heartbeat = 15 * time.Second
	}
	quiet := time.Now()
	err := a.Tail.Follow(ctx, tenantID, f, since, func(b audit.TailBatch) error {
		if b.Skipped {
			if _, err := fmt.Fprint(w, "event: skipped\ndata: {}\n\n"); err != nil {
				return err
			}
		}
		for _, e := range b.Entries {
			data, err := encode(e)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "event: audit\nid: %s\ndata: %s\n\n", e.At.UTC().Format(time.RFC3339Nano), data); err != nil {
				return err
			}
		}
		if len(b.Entries) == 0 && !b.Skipped {
			if time.Since(quiet) < heartbeat {
				return nil
			}
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return err
			}
		}
		quiet = time.Now()
		flush()
		return nil
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// SinceOf is where a tail starts: the time in a reconnecting client's
// Last-Event-ID when it holds one from the last hour, else now.
func SinceOf(lastEventID string, now time.Time) time.Time {
	t, err := time.Parse(time.RFC3339Nano, lastEventID)
	if err != nil || t.After(now) || t.Before(now.Add(-time.Hour)) {
		return now
	}
	return t
}

func (a *AuditTailer) take(tenantID uuid.UUID) bool {
	limit := a.MaxPerTenant
	if limit <= 0 {
		limit = 16
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open == nil {
		a.open = map[uuid.UUID]int{}
	}
	if a.open[tenantID] >= limit {
		return false
	}
	a.open[tenantID]++
	return true
}

func (a *AuditTailer) release(tenantID uuid.UUID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open[tenantID]--; a.open[tenantID] <= 0 {
		delete(a.open, tenantID)
	}
}
