package redisx

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/live"
)

// PresenceKey is the Redis hash that lists one tenant's live streams: one
// field per replica, holding that replica's report. Keys are per tenant, so
// reading one tenant's streams never touches another's.
func PresenceKey(tenantID uuid.UUID) string { return "visor:tenant:" + tenantID.String() + ":streams" }

// maxReported bounds the streams one replica reports for one tenant; the
// report says how many more it holds.
const maxReported = 1000

// report is one replica's streams of one tenant.
type report struct {
	At      time.Time         `json:"at"`
	Streams []live.Connection `json:"streams"`
	More    int               `json:"more,omitempty"`
}

// Presence publishes this replica's live streams to Redis every Every and
// reads every replica's: a live.Directory shared across replicas. A report
// older than three periods is ignored (its replica stopped or lost Redis),
// and each tenant's hash expires after three periods without a report.
type Presence struct {
	rdb     *redis.Client
	replica string
	every   time.Duration
	snap    func(replica string) map[uuid.UUID][]live.Connection
	log     *slog.Logger

	life     lifecycle.Base
	reported map[uuid.UUID]bool // tenants this replica reported last time
}

var _ live.Directory = (*Presence)(nil)

// NewPresence returns the presence of replica, whose streams snap returns
// (live.Hub.Connections). every defaults to 5s.
func NewPresence(rdb *redis.Client, replica string, every time.Duration, snap func(string) map[uuid.UUID][]live.Connection, log *slog.Logger) *Presence {
	if every <= 0 {
		every = 5 * time.Second
	}
	return &Presence{rdb: rdb, replica: replica, every: every, snap: snap, log: log, reported: map[uuid.UUID]bool{}}
}

// Start reports at once and then every period until Stop, which withdraws
// this replica's reports.
func (p *Presence) Start(ctx context.Context) error {
	return p.life.Start(ctx, func(ctx context.Context) {
		tick := time.NewTicker(p.every)
		defer tick.Stop()
		for {
			p.Report(ctx)
			select {
			case <-ctx.Done():
				p.withdraw()
				return
			case <-tick.C:
			}
		}
	})
}

// Stop ends the reports and removes this replica's. It is safe to call twice.
func (p *Presence) Stop() { p.life.Stop() }

// Report writes this replica's streams now, and removes its report from
// the tenants where it holds none any more. A failure is logged: the next
// period tries again.
func (p *Presence) Report(ctx context.Context) {
	now := time.Now()
	ttl := 3 * p.every
	pipe := p.rdb.Pipeline()
	seen := map[uuid.UUID]bool{}
	for tenantID, cs := range p.snap(p.replica) {
		r := report{At: now, Streams: cs}
		if len(cs) > maxReported {
			r.Streams, r.More = cs[:maxReported], len(cs)-maxReported
		}
		data, err := json.Marshal(r)
		if err != nil {
			continue
		}
		key := PresenceKey(tenantID)
		pipe.HSet(ctx, key, p.replica, data)
		pipe.Expire(ctx, key, ttl)
		seen[tenantID] = true
	}
	for tenantID := range p.reported {
		if !seen[tenantID] {
			pipe.HDel(ctx, PresenceKey(tenantID), p.replica)
		}
	}
	if pipe.Len() == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := pipe.Exec(ctx); err != nil {
		p.log.WarnContext(ctx, "report live streams", "err", err)
		return
	}
	p.reported = seen
}

// withdraw removes this replica's reports as it stops.
func (p *Presence) withdraw() {
	if len(p.reported) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	pipe := p.rdb.Pipeline()
	for tenantID := range p.reported {
		pipe.HDel(ctx, PresenceKey(tenantID), p.replica)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		p.log.Warn("withdraw live streams", "err", err)
	}
}

// Connected returns tenantID's streams on every replica that reported in
// the last three periods, oldest first.
func (p *Presence) Connected(ctx context.Context, tenantID uuid.UUID) ([]live.Connection, error) {
	fields, err := p.rdb.HGetAll(ctx, PresenceKey(tenantID)).Result()
	if err != nil {
		return nil, fmt.Errorf("read live streams of tenant %s: %w", tenantID, err)
	}
	stale := time.Now().Add(-3 * p.every)
	var out []live.Connection
	for replica, raw := range fields {
		var r report
		if json.Unmarshal([]byte(raw), &r) != nil || r.At.Before(stale) {
			continue
		}
		for _, c := range r.Streams {
			c.Replica = replica
			out = append(out, c)
		}
	}
	live.SortConnections(out)
	return out, nil
}
